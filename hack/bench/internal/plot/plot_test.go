package plot

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestTick(t *testing.T) {
	for _, c := range []struct{ max, want float64 }{
		{0, 1}, {4.5, 1}, {10, 2}, {23, 5}, {180, 50}, {1000, 200}, {0.03, 0.01},
	} {
		if got := tick(c.max); got != c.want {
			t.Errorf("tick(%v) = %v, want %v", c.max, got, c.want)
		}
	}
}

// A chart is a PNG of the chart's size with each series drawn in its
// colour where its points fall.
func TestWritePNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	c := Chart{Title: "t", XLabel: "s", YLabel: "MiB", Series: []Series{
		{Name: "a", X: []float64{0, 10}, Y: []float64{0, 100}},
		{Name: "b", X: []float64{5}, Y: []float64{50}, Dots: true},
	}}
	if err := c.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("size %v", b)
	}
	// Axes 0..10 and 0..100: a's end is the plot's top right corner, b's
	// dot its centre.
	for _, p := range []struct {
		x, y, series int
	}{{width - right, top, 0}, {left + (width-left-right)/2, height - base - (height-top-base)/2, 1}} {
		r, g, b, _ := img.At(p.x, p.y).RGBA()
		w := palette[p.series]
		if uint8(r>>8) != w.R || uint8(g>>8) != w.G || uint8(b>>8) != w.B {
			t.Errorf("pixel (%d,%d) = %d,%d,%d, want series %d's colour %v", p.x, p.y, r>>8, g>>8, b>>8, p.series, w)
		}
	}
	if err := (Chart{Series: []Series{{X: []float64{1}}}}).WritePNG(path); err == nil {
		t.Error("a series with more x than y was drawn")
	}
}
