package benchclient

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Plot geometry, in pixels.
const (
	plotW, plotH   = 1200, 520
	panelW, panelH = 500, 360
	marginL        = 70
	marginT        = 70
	panelGap       = 110
)

var (
	white   = color.RGBA{255, 255, 255, 255}
	black   = color.RGBA{0, 0, 0, 255}
	grey    = color.RGBA{220, 220, 220, 255}
	palette = []color.RGBA{
		{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	}
)

// series is one run's line in a panel.
type series struct {
	label string
	x, y  []float64
}

// WritePNG draws the runs: TTFT p50 per turn number (left) and the
// prefix-cache hit rate per turn number (right), one line per run.
func WritePNG(w io.Writer, title string, runs []*Run) error {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	drawText(img, marginL, 24, title, black)
	var ttft, hit []series
	for _, r := range runs {
		st, sh := series{label: r.Label}, series{label: r.Label}
		for _, t := range r.Summary.Turns {
			st.x, st.y = append(st.x, float64(t.Turn)), append(st.y, t.TTFT.Median)
			sh.x, sh.y = append(sh.x, float64(t.Turn)), append(sh.y, 100*t.HitRate)
		}
		ttft, hit = append(ttft, st), append(hit, sh)
	}
	panel(img, image.Pt(marginL, marginT), "TTFT p50 (ms) by turn", ttft, false)
	panel(img, image.Pt(marginL+panelW+panelGap, marginT), "prefix-cache hit rate (%) by turn", hit, true)
	// Legend under the panels.
	x := marginL
	for i, r := range runs {
		c := palette[i%len(palette)]
		fillRect(img, image.Rect(x, plotH-34, x+14, plotH-22), c)
		drawText(img, x+20, plotH-23, r.Label, black)
		x += 40 + 8*len(r.Label)
	}
	return png.Encode(w, img)
}

// panel draws one line chart with its origin (top-left) at o.
func panel(img *image.RGBA, o image.Point, title string, ss []series, percent bool) {
	drawText(img, o.X, o.Y-12, title, black)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.x {
			xmin, xmax, ymax = math.Min(xmin, s.x[i]), math.Max(xmax, s.x[i]), math.Max(ymax, s.y[i])
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 1, 1
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	if percent {
		ymax = 100
	}
	ymax = niceCeil(ymax)
	px := func(x float64) int { return o.X + int((x-xmin)/(xmax-xmin)*float64(panelW)) }
	py := func(y float64) int { return o.Y + panelH - int(y/ymax*float64(panelH)) }
	// Grid, axes and ticks.
	for k := 0; k <= 5; k++ {
		y := ymax * float64(k) / 5
		line(img, o.X, py(y), o.X+panelW, py(y), grey)
		drawText(img, o.X-8-7*len(tick(y)), py(y)+4, tick(y), black)
	}
	for x := math.Ceil(xmin); x <= xmax; x++ {
		drawText(img, px(x)-3, o.Y+panelH+16, fmt.Sprint(int(x)), black)
	}
	drawText(img, o.X+panelW/2-14, o.Y+panelH+32, "turn", black)
	line(img, o.X, o.Y, o.X, o.Y+panelH, black)
	line(img, o.X, o.Y+panelH, o.X+panelW, o.Y+panelH, black)
	for i, s := range ss {
		c := palette[i%len(palette)]
		for k := range s.x {
			x, y := px(s.x[k]), py(s.y[k])
			fillRect(img, image.Rect(x-3, y-3, x+4, y+4), c)
			if k > 0 {
				thickLine(img, px(s.x[k-1]), py(s.y[k-1]), x, y, c)
			}
		}
	}
}

// niceCeil rounds v up to 1, 2 or 5 × a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func tick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprint(int(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func drawText(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func fillRect(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

// line draws a 1-pixel line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func thickLine(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	for d := -1; d <= 1; d++ {
		line(img, x0, y0+d, x1, y1+d, c)
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
