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
	colLlama  = color.RGBA{0xff, 0x7f, 0x0e, 0xff} // orange: prebuilt
	colNative = color.RGBA{0x2c, 0xa0, 0x2c, 0xff} // green: native build
	colAxis   = color.RGBA{0x33, 0x33, 0x33, 0xff}
	colGrid   = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	colText   = color.Black
	colBusy   = color.RGBA{0xcc, 0x00, 0x00, 0xff} // notes of rows measured on a busy machine
)

// barGroup is one configuration: Tandem's bar, then one per llama.cpp
// column that ran.
type barGroup struct {
	label string
	bars  []bar
	note  string // under the label, e.g. the ratio
	busy  bool   // measured while other processes used the CPU (see Row.otherCPU)
}

// bar is one engine's value in a group.
type bar struct {
	v float64 // tok/s
	c color.Color
}

// panel is one chart with its own y scale.
type panel struct {
	title  string
	groups []barGroup
}

// groupOf is r's bars for prefill or decode, with the targets' ratio as
// the note.
func groupOf(r Row, label string, prefill bool, limit float64) barGroup {
	pick := func(m *Measure) float64 {
		if prefill {
			return m.Prefill
		}
		return m.Decode
	}
	g := barGroup{label: label, bars: []bar{{pick(&r.Tandem), colTandem}}, busy: r.otherCPU() > limit}
	if r.Llama != nil {
		g.bars = append(g.bars, bar{pick(r.Llama), colLlama})
	}
	if r.Native != nil {
		g.bars = append(g.bars, bar{pick(r.Native), colNative})
	}
	pre, dec := r.baseline()
	if prefill {
		g.note = asciiRatio(pre)
	} else {
		g.note = asciiRatio(dec)
	}
	return g
}

// panels turns rep into charts: single-stream prefill and decode, and the
// sweep's aggregate decode.
func panels(rep *Report) []panel {
	var out []panel
	if rows := rowsOf(rep.Rows, kindSingle); len(rows) > 0 {
		p := panel{title: fmt.Sprintf("single stream tok/s (P=%d, D=%d)", rows[0].PromptTokens, rows[0].GenTokens)}
		for _, prefill := range []bool{true, false} {
			for _, r := range rows {
				label := fmt.Sprintf("decode %dt", r.Threads)
				if prefill {
					label = fmt.Sprintf("prefill %dt", r.Threads)
				}
				p.groups = append(p.groups, groupOf(r, label, prefill, rep.MaxOtherCPU))
			}
		}
		out = append(out, p)
	}
	if rows := rowsOf(rep.Rows, kindStreams); len(rows) > 0 {
		p := panel{title: fmt.Sprintf("aggregate decode tok/s vs streams (P=%d, D=%d per stream)", rows[0].PromptTokens, rows[0].GenTokens)}
		for _, r := range rows {
			p.groups = append(p.groups, groupOf(r, fmt.Sprintf("%dt x%d", r.Threads, r.Streams), false, rep.MaxOtherCPU))
		}
		out = append(out, p)
	}
	return out
}

// writePlot draws rep as grouped bars (Tandem blue, llama.cpp prebuilt
// orange, llama.cpp native green) with the targets' ratio Tandem/llama.cpp
// under each group (native where it ran; "busy" in red when other
// processes disturbed the measurement), and encodes a PNG.
func writePlot(w io.Writer, rep *Report) error {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	title := fmt.Sprintf("Tandem vs llama.cpp, %s, %s", filepath.Base(rep.Model), rep.Date)
	text(img, plotMargin, plotMargin+lineH, title, colText)
	against := "llama.cpp prebuilt"
	if rep.Native != nil {
		against = "llama.cpp native"
	}
	sub := fmt.Sprintf("%s, %d cores; median of reps; ratio = Tandem / %s", orUnknown(rep.Machine.CPU), rep.Machine.Cores, against)
	text(img, plotMargin, plotMargin+2*lineH+2, sub, colAxis)
	type entry struct {
		name string
		c    color.Color
	}
	legend := []entry{{"Tandem", colTandem}}
	if rep.Llama != nil {
		legend = append(legend, entry{"llama.cpp prebuilt", colLlama})
	}
	if rep.Native != nil {
		legend = append(legend, entry{"llama.cpp native", colNative})
	}
	lx := plotW - plotMargin
	for i := len(legend) - 1; i >= 0; i-- {
		lx -= 18 + width(legend[i].name) + 16
		fill(img, image.Rect(lx, plotMargin+4, lx+12, plotMargin+16), legend[i].c)
		text(img, lx+18, plotMargin+lineH, legend[i].name, colText)
	}

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
		for _, b := range g.bars {
			top = max(top, b.v)
		}
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
	for i, g := range p.groups {
		cx := plot.Min.X + i*slot + slot/2
		// The bars of a group fill 60% of its slot, 2 px apart.
		barW := max(4, (slot*6/10)/max(2, len(g.bars))-2)
		x0 := cx - (len(g.bars)*(barW+2)-2)/2
		for j, b := range g.bars {
			bx := x0 + j*(barW+2)
			yy := y(b.v)
			fill(img, image.Rect(bx, yy, bx+barW, plot.Max.Y), b.c)
			lbl := fmt.Sprintf("%.0f", b.v)
			text(img, bx+barW/2-width(lbl)/2, yy-3, lbl, colText)
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
