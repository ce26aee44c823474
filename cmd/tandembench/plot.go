package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Plot geometry, in pixels.
const (
	plotW       = 1200
	plotH       = 640
	plotMargin  = 24
	titleH      = 56 // title and legend band
	panelGap    = 40
	axisLeft    = 56 // room for y tick labels
	axisBottom  = 44 // room for group labels and ratios
	panelTitleH = 22
	lineH       = 14 // basicfont.Face7x13 line height
)

var (
	colTandem = color.RGBA{0x1f, 0x77, 0xb4, 0xff} // blue
	colLlama  = color.RGBA{0xff, 0x7f, 0x0e, 0xff} // orange
	colAxis   = color.RGBA{0x33, 0x33, 0x33, 0xff}
	colGrid   = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	colText   = color.Black
	colBusy   = color.RGBA{0xcc, 0x00, 0x00, 0xff} // notes of rows measured on a busy machine
)

// barGroup is one configuration: Tandem's bar and llama.cpp's (when run).
type barGroup struct {
	label    string
	tandem   float64 // tok/s
	llama    float64 // tok/s
	hasLlama bool
	note     string // under the label, e.g. the ratio
	busy     bool   // measured while other processes used the CPU (see Row.otherCPU)
}

// panel is one chart with its own y scale.
type panel struct {
	title  string
	groups []barGroup
}

// panels turns rep into charts: single-stream prefill and decode, and the
// sweep's aggregate decode.
func panels(rep *Report) []panel {
	var out []panel
	if rows := rowsOf(rep.Rows, kindSingle); len(rows) > 0 {
		p := panel{title: fmt.Sprintf("single stream tok/s (P=%d, D=%d)", rows[0].PromptTokens, rows[0].GenTokens)}
		for _, prefill := range []bool{true, false} {
			for _, r := range rows {
				g := barGroup{tandem: r.Tandem.Decode, note: asciiRatio(r.DecodeRatio), busy: r.otherCPU() > rep.MaxOtherCPU}
				g.label = fmt.Sprintf("decode %dt", r.Threads)
				if prefill {
					g = barGroup{label: fmt.Sprintf("prefill %dt", r.Threads), tandem: r.Tandem.Prefill, note: asciiRatio(r.PrefillRatio), busy: g.busy}
				}
				if r.Llama != nil {
					g.hasLlama = true
					g.llama = r.Llama.Decode
					if prefill {
						g.llama = r.Llama.Prefill
					}
				}
				p.groups = append(p.groups, g)
			}
		}
		out = append(out, p)
	}
	if rows := rowsOf(rep.Rows, kindStreams); len(rows) > 0 {
		p := panel{title: fmt.Sprintf("aggregate decode tok/s vs streams (P=%d, D=%d per stream)", rows[0].PromptTokens, rows[0].GenTokens)}
		for _, r := range rows {
			g := barGroup{label: fmt.Sprintf("%dt x%d", r.Threads, r.Streams), tandem: r.Tandem.Decode, note: asciiRatio(r.DecodeRatio), busy: r.otherCPU() > rep.MaxOtherCPU}
			if r.Llama != nil {
				g.hasLlama, g.llama = true, r.Llama.Decode
			}
			p.groups = append(p.groups, g)
		}
		out = append(out, p)
	}
	return out
}

// writePlot draws rep as grouped bars (Tandem blue, llama.cpp orange) with
// the ratio Tandem/llama.cpp under each group ("busy" in red when other
// processes disturbed the measurement), and encodes a PNG.
func writePlot(w io.Writer, rep *Report) error {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	title := fmt.Sprintf("Tandem vs llama.cpp, %s, %s", filepath.Base(rep.Model), rep.Date)
	text(img, plotMargin, plotMargin+lineH, title, colText)
	sub := fmt.Sprintf("%s, %d cores; median of reps; ratio = Tandem / llama.cpp", orUnknown(rep.Machine.CPU), rep.Machine.Cores)
	text(img, plotMargin, plotMargin+2*lineH+2, sub, colAxis)
	lx := plotW - plotMargin - 220
	fill(img, image.Rect(lx, plotMargin+4, lx+12, plotMargin+16), colTandem)
	text(img, lx+18, plotMargin+lineH, "Tandem", colText)
	fill(img, image.Rect(lx+90, plotMargin+4, lx+102, plotMargin+16), colLlama)
	text(img, lx+108, plotMargin+lineH, "llama.cpp", colText)

	ps := panels(rep)
	if len(ps) > 0 {
		// Panels share the width in proportion to their group counts.
		total := 0
		for _, p := range ps {
			total += len(p.groups)
		}
		avail := plotW - 2*plotMargin - (len(ps)-1)*panelGap
		x := plotMargin
		for _, p := range ps {
			wdt := avail * len(p.groups) / total
			drawPanel(img, image.Rect(x, plotMargin+titleH, x+wdt, plotH-plotMargin), p)
			x += wdt + panelGap
		}
	}
	return png.Encode(w, img)
}

// drawPanel draws p inside r: title, y axis with ticks and grid, bars with
// their values, group labels and notes.
func drawPanel(img *image.RGBA, r image.Rectangle, p panel) {
	text(img, r.Min.X, r.Min.Y+lineH, p.title, colText)
	plot := image.Rect(r.Min.X+axisLeft, r.Min.Y+panelTitleH+lineH, r.Max.X, r.Max.Y-axisBottom)
	top := 0.0
	for _, g := range p.groups {
		top = max(top, g.tandem, g.llama)
	}
	step := niceStep(top / 5)
	top = math.Ceil(top/step) * step
	y := func(v float64) int { return plot.Max.Y - int(math.Round(v/top*float64(plot.Dy()))) }
	for v := 0.0; v <= top+step/2; v += step {
		yy := y(v)
		fill(img, image.Rect(plot.Min.X, yy, plot.Max.X, yy+1), colGrid)
		lbl := fmt.Sprintf("%g", v)
		text(img, plot.Min.X-6-width(lbl), yy+4, lbl, colAxis)
	}
	fill(img, image.Rect(plot.Min.X, plot.Min.Y, plot.Min.X+1, plot.Max.Y+1), colAxis)
	fill(img, image.Rect(plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y+1), colAxis)

	n := len(p.groups)
	if n == 0 {
		return
	}
	slot := plot.Dx() / n
	barW := max(4, slot*3/10)
	for i, g := range p.groups {
		cx := plot.Min.X + i*slot + slot/2
		bars := []struct {
			v   float64
			c   color.Color
			x0  int
			has bool
		}{
			{g.tandem, colTandem, cx - barW - 1, true},
			{g.llama, colLlama, cx + 1, g.hasLlama},
		}
		if !g.hasLlama {
			bars[0].x0 = cx - barW/2
		}
		for _, b := range bars {
			if !b.has {
				continue
			}
			yy := y(b.v)
			fill(img, image.Rect(b.x0, yy, b.x0+barW, plot.Max.Y), b.c)
			lbl := fmt.Sprintf("%.0f", b.v)
			text(img, b.x0+barW/2-width(lbl)/2, yy-3, lbl, colText)
		}
		text(img, cx-width(g.label)/2, plot.Max.Y+lineH+2, g.label, colText)
		note, c := g.note, color.Color(colAxis)
		if g.busy {
			note, c = strings.TrimSpace(note+" busy"), colBusy
		}
		text(img, cx-width(note)/2, plot.Max.Y+2*lineH+4, note, c)
	}
}

// asciiRatio formats a ratio for basicfont, which has ASCII only.
func asciiRatio(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.2fx", *v)
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten (1 for x ≤ 0).
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if x <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// text draws s with its baseline at y.
func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// width is s's width in pixels.
func width(s string) int {
	return font.MeasureString(basicfont.Face7x13, s).Round()
}
