package sim

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one named line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// Chart describes a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Series                []Series
}

// Save writes the chart to path; the format follows the extension (.svg,
// .png or .pdf). Points whose X or Y is NaN are left out.
func (c Chart) Save(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("plot %s: unsupported extension %q (want .svg, .png or .pdf)", path, ext)
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Legend.Left = false
	for i, s := range c.Series {
		pts := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if j >= len(s.Y) || math.IsNaN(s.X[j]) || math.IsNaN(s.Y[j]) || (c.LogX && s.X[j] <= 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plot %s: series %q: %w", path, s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// AccuracyCharts returns the two standard charts of a run: test accuracy
// against the round and against cumulative uplink bytes.
func AccuracyCharts(title string, runs map[string][]Record, order []string) (byRound, byBytes Chart) {
	byRound = Chart{Title: title, XLabel: "round", YLabel: "test accuracy"}
	byBytes = Chart{Title: title, XLabel: "cumulative uplink bytes", YLabel: "test accuracy", LogX: true}
	for _, name := range order {
		recs := runs[name]
		var r, b, a []float64
		for _, rec := range recs {
			if math.IsNaN(rec.Accuracy) {
				continue
			}
			r = append(r, float64(rec.Round))
			b = append(b, float64(rec.CumUplinkBytes))
			a = append(a, rec.Accuracy)
		}
		byRound.Series = append(byRound.Series, Series{Name: name, X: r, Y: a})
		byBytes.Series = append(byBytes.Series, Series{Name: name, X: b, Y: a})
	}
	return byRound, byBytes
}
