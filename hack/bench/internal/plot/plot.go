// Package plot draws the benchmarks' time series as PNG line charts: one
// chart, one or more named series of (x, y) points, linear axes from zero
// with round ticks, a legend. It is deliberately small (the standard
// library's image and golang.org/x/image's fixed 7x13 font): the drivers
// need "latency over time" and "RSS over time", not a plotting system.
package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line (or, with Dots, a scatter of points).
type Series struct {
	Name string
	X, Y []float64
	// Dots draws each point alone instead of joining them (many samples
	// that are not a function of time, such as each pod's latency).
	Dots bool
}

// Chart is a chart to draw.
type Chart struct {
	Title          string
	XLabel, YLabel string
	Series         []Series
}

const (
	width, height          = 900, 500
	left, right, top, base = 80, 20, 30, 50
)

var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {23, 190, 207, 255}, {127, 127, 127, 255},
}

// WritePNG draws c into path.
func (c Chart) WritePNG(path string) error {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	xmax, ymax := 0.0, 0.0
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot %q: series %q has %d x and %d y", c.Title, s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			xmax, ymax = math.Max(xmax, s.X[i]), math.Max(ymax, s.Y[i])
		}
	}
	xstep, ystep := tick(xmax), tick(ymax)
	xmax, ymax = xstep*math.Ceil(xmax/xstep), ystep*math.Ceil(ymax/ystep)
	pw, ph := float64(width-left-right), float64(height-top-base)
	px := func(x float64) int { return left + int(x/xmax*pw) }
	py := func(y float64) int { return height - base - int(y/ymax*ph) }
	grey, black := color.RGBA{220, 220, 220, 255}, color.RGBA{0, 0, 0, 255}
	for x := 0.0; x <= xmax+xstep/2; x += xstep {
		line(img, px(x), top, px(x), height-base, grey)
		label(img, px(x)-3*len(num(x)), height-base+16, num(x), black)
	}
	for y := 0.0; y <= ymax+ystep/2; y += ystep {
		line(img, left, py(y), width-right, py(y), grey)
		label(img, left-8-7*len(num(y)), py(y)+4, num(y), black)
	}
	line(img, left, height-base, width-right, height-base, black)
	line(img, left, top, left, height-base, black)
	label(img, left, 18, c.Title, black)
	label(img, left+int(pw)/2-7*len(c.XLabel)/2, height-12, c.XLabel, black)
	label(img, 4, 18, c.YLabel, black)
	longest := 0
	for _, s := range c.Series {
		longest = max(longest, len(s.Name))
	}
	lx := width - right - 30 - 7*longest
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		for j := range s.X {
			x, y := px(s.X[j]), py(s.Y[j])
			if s.Dots {
				img.Set(x, y, col)
				img.Set(x+1, y, col)
				img.Set(x, y+1, col)
				img.Set(x+1, y+1, col)
			} else if j > 0 {
				line(img, px(s.X[j-1]), py(s.Y[j-1]), x, y, col)
			}
		}
		ly := top + 14 + 16*i
		line(img, lx, ly-4, lx+20, ly-4, col)
		label(img, lx+25, ly, s.Name, black)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tick is a round step (1, 2 or 5 times a power of ten) giving about five
// intervals up to max.
func tick(max float64) float64 {
	if max <= 0 {
		return 1
	}
	raw := max / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// line draws from (x0, y0) to (x1, y1) (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
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

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
