package batch

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a progress bar: one redrawn line on a terminal, a line per
// tenth of the batch otherwise.
type progress struct {
	w           io.Writer // nil = no output
	interactive bool
	total       int // lines
	start       time.Time
	last        time.Time // last redraw
	lastTenth   int       // last tenth printed, non-interactive
}

func newProgress(w io.Writer, interactive bool, total int) *progress {
	return &progress{w: w, interactive: interactive, total: total, start: time.Now()}
}

// barWidth is the bar's length, characters.
const barWidth = 30

func (p *progress) line(s Summary) string {
	filled := barWidth
	if p.total > 0 {
		filled = barWidth * s.NumLines / p.total
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled)
	rate := float64(s.NumLines) / max(time.Since(p.start).Seconds(), 1e-3)
	return fmt.Sprintf("run-batch [%s] %d/%d lines, %d failed, %.1f lines/s", bar, s.NumLines, p.total, s.NumFailed, rate)
}

func (p *progress) update(s Summary) {
	if p.w == nil {
		return
	}
	if p.interactive {
		if time.Since(p.last) >= 100*time.Millisecond {
			p.last = time.Now()
			fmt.Fprintf(p.w, "\r%s", p.line(s))
		}
		return
	}
	if tenth := 10 * s.NumLines / max(p.total, 1); tenth > p.lastTenth {
		p.lastTenth = tenth
		fmt.Fprintln(p.w, p.line(s))
	}
}

func (p *progress) finish(s Summary) {
	if p.w == nil {
		return
	}
	if p.interactive {
		fmt.Fprintf(p.w, "\r%s\n", p.line(s))
	} else if p.lastTenth < 10 {
		fmt.Fprintln(p.w, p.line(s))
	}
}
