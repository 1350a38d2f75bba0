package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Image size: 1200x500 pixels at 96 DPI.
const (
	dpi       = 96
	imgWidth  = 1200 * vg.Inch / dpi
	imgHeight = 500 * vg.Inch / dpi
)

var (
	readColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	writeColor = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff} // orange
	memColor   = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // green
)

// Format is the output image format.
type Format int

const (
	SVG Format = iota
	PNG
)

// FormatFor picks the format from the output file name: PNG for .png, SVG otherwise.
func FormatFor(name string) Format {
	if strings.HasSuffix(strings.ToLower(name), ".png") {
		return PNG
	}
	return SVG
}

// Render draws the three panels (IOPS, mean latency, memory overhead) under
// one title and writes the image to w.
func Render(w io.Writer, targets []Target, title string, format Format) error {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	col := func(f func(Target) number) plotter.Values {
		v := make(plotter.Values, len(targets))
		for i, t := range targets {
			v[i] = float64(f(t))
		}
		return v
	}

	iops, err := groupedPanel("IOPS (operations/s)", "IOPS", names,
		series{col(func(t Target) number { return t.ReadIOPS }), col(func(t Target) number { return t.ReadIOPSMin }), col(func(t Target) number { return t.ReadIOPSMax })},
		series{col(func(t Target) number { return t.WriteIOPS }), col(func(t Target) number { return t.WriteIOPSMin }), col(func(t Target) number { return t.WriteIOPSMax })},
		fmtCount)
	if err != nil {
		return err
	}
	lat, err := groupedPanel("Mean latency (ms)", "ms", names,
		series{col(func(t Target) number { return t.ReadLatencyMs }), col(func(t Target) number { return t.ReadLatencyMsMin }), col(func(t Target) number { return t.ReadLatencyMsMax })},
		series{col(func(t Target) number { return t.WriteLatencyMs }), col(func(t Target) number { return t.WriteLatencyMsMin }), col(func(t Target) number { return t.WriteLatencyMsMax })},
		fmtLatency)
	if err != nil {
		return err
	}
	mem, err := singlePanel("Memory overhead (MiB)", "MiB", names,
		col(func(t Target) number { return t.MemoryOverheadMiB }), fmtCount)
	if err != nil {
		return err
	}

	var c vg.CanvasWriterTo
	switch format {
	case PNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(imgWidth, imgHeight), vgimg.UseDPI(dpi))}
	default:
		c = vgsvg.New(imgWidth, imgHeight)
	}
	dc := draw.New(c)

	// White background for viewers that show transparency.
	dc.SetColor(color.White)
	dc.Fill(dc.Path())

	// Overall title across the top.
	ts := text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, 16),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
	ts.Font.Weight = xfont.WeightBold
	pad := vg.Points(8)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - pad}, title)
	body := dc
	body.Max.Y -= ts.Rectangle(title).Size().Y + 2*pad
	// One legend for all panels, under the title and outside every plotting area, so it
	// never covers a bar.
	body.Max.Y -= drawLegend(dc, body.Max.Y) + pad

	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Points(18), PadLeft: pad, PadRight: pad, PadBottom: pad}
	plots := [][]*plot.Plot{{iops, lat, mem}}
	canvases := plot.Align(plots, tiles, body)
	for j, p := range plots[0] {
		p.Draw(canvases[0][j])
	}

	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return nil
}

// legendEntries are the legend's swatches and words, left to right.
var legendEntries = []struct {
	color color.Color
	label string
}{
	{readColor, "read"},
	{writeColor, "write"},
	{memColor, "memory"},
}

// legendNote explains the whiskers, after the swatches.
const legendNote = "bars: median of the rounds; whiskers: lowest and highest round"

// drawLegend draws the legend centred on one line whose top is at top, and returns its height.
func drawLegend(dc draw.Canvas, top vg.Length) vg.Length {
	ts := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 11), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	height := ts.Rectangle("Xg").Size().Y
	swatch, gap := height*0.8, vg.Points(5)
	widths := make([]vg.Length, len(legendEntries))
	total := ts.Rectangle(legendNote).Size().X
	for i, e := range legendEntries {
		widths[i] = swatch + gap + ts.Rectangle(e.label).Size().X + 3*gap
		total += widths[i]
	}
	x := dc.Center().X - total/2
	y := top - height/2
	for i, e := range legendEntries {
		dc.SetColor(e.color)
		dc.Fill(vg.Rectangle{Min: vg.Point{X: x, Y: y - swatch/2}, Max: vg.Point{X: x + swatch, Y: y + swatch/2}}.Path())
		dc.FillText(ts, vg.Point{X: x + swatch + gap, Y: y}, e.label)
		x += widths[i]
	}
	note := ts
	note.Color = color.Gray{Y: 0x55}
	dc.FillText(note, vg.Point{X: x, Y: y}, legendNote)
	return height
}

// panelDataWidth is roughly the width of one panel's data area; bars are
// sized from it so that many targets still fit side by side.
const panelDataWidth = vg.Length(230)

// barWidth gives the width of each bar when every target's slot holds
// perSlot bars, capped at maxW so that few targets do not get slabs.
func barWidth(targets, perSlot int, maxW vg.Length) vg.Length {
	return min(maxW, panelDataWidth*0.8/vg.Length(targets*perSlot))
}

// minLabelledBar is the narrowest bar that still gets a value label; below
// it neighbouring labels would overlap.
const minLabelledBar = vg.Length(17)

// series is one direction's medians with, per target, the lowest and highest
// round (both 0 when there were no rounds to range over).
type series struct {
	median, min, max plotter.Values
}

// top is where a target's label goes: above its range bar, or its bar.
func (s series) top() plotter.Values {
	out := make(plotter.Values, len(s.median))
	for i, v := range s.median {
		out[i] = math.Max(v, s.max[i])
	}
	return out
}

// groupedPanel makes a read/write grouped bar chart with one group per target:
// bars at the medians, with a min-max range bar where rounds give one.
func groupedPanel(title, unit string, names []string, read, write series, format func(float64) string) (*plot.Plot, error) {
	p := newPanel(title, unit, names)
	w := barWidth(len(names), 2, 22)
	rb, err := bars(read.median, readColor, w, -w/2)
	if err != nil {
		return nil, err
	}
	wb, err := bars(write.median, writeColor, w, w/2)
	if err != nil {
		return nil, err
	}
	p.Add(rb, wb, rangeBars{read, -w / 2, w / 4}, rangeBars{write, w / 2, w / 4})
	if w >= minLabelledBar {
		rl, err := valueLabels(read.median, read.top(), -w/2, format)
		if err != nil {
			return nil, err
		}
		wl, err := valueLabels(write.median, write.top(), w/2, format)
		if err != nil {
			return nil, err
		}
		p.Add(rl, wl)
	}
	setYMax(p, read.top(), write.top())
	return p, nil
}

// rangeBars draws, for each target with a range (max > 0), a vertical line
// from min to max with caps half a bar wide, offset like its bar.
type rangeBars struct {
	s      series
	offset vg.Length
	cap    vg.Length
}

func (r rangeBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	for i := range r.s.median {
		if r.s.max[i] <= 0 {
			continue
		}
		x := trX(float64(i)) + r.offset
		lo, hi := trY(r.s.min[i]), trY(r.s.max[i])
		c.StrokeLine2(ls, x, lo, x, hi)
		c.StrokeLine2(ls, x-r.cap, lo, x+r.cap, lo)
		c.StrokeLine2(ls, x-r.cap, hi, x+r.cap, hi)
	}
}

// singlePanel makes a bar chart with one bar per target.
func singlePanel(title, unit string, names []string, vals plotter.Values, format func(float64) string) (*plot.Plot, error) {
	p := newPanel(title, unit, names)
	w := barWidth(len(names), 1, 33)
	b, err := bars(vals, memColor, w, 0)
	if err != nil {
		return nil, err
	}
	p.Add(b)
	if w >= minLabelledBar {
		l, err := valueLabels(vals, vals, 0, format)
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}
	setYMax(p, vals)
	return p, nil
}

func newPanel(title, unit string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 13
	p.Y.Label.Text = unit
	p.Y.Min = 0
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // bars mark the targets; only value lines help
	p.Add(grid)
	// Half a slot either side, so the outer bars do not touch the axes and
	// the grid lines span the whole panel.
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.X.Tick.Label.Font.Size = 10
	labels := make([]string, len(names))
	for i, n := range names {
		labels[i] = wrapLabel(n)
	}
	if widestLine(p.X.Tick.Label, labels) > 0.9*panelDataWidth/vg.Length(len(names)) {
		// Wider than a slot even on two lines: one line each, tilted steeply enough
		// that neighbours cannot touch (at 45 degrees, lines one slot apart are a slot
		// times sin 45 apart, more than a line's height).
		labels = names
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.NominalX(labels...)
	return p
}

// wrapLabel puts each comma-separated part of a target name on a line of its own
// ("disk, node 1" -> "disk\nnode 1"), so labels take half the width.
func wrapLabel(name string) string {
	parts := strings.Split(name, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return strings.Join(parts, "\n")
}

// widestLine is the width of the widest line of labels in style ts.
func widestLine(ts text.Style, labels []string) vg.Length {
	var w vg.Length
	for _, l := range labels {
		for _, line := range strings.Split(l, "\n") {
			w = max(w, ts.Rectangle(line).Size().X)
		}
	}
	return w
}

func bars(vals plotter.Values, c color.Color, width, offset vg.Length) (*plotter.BarChart, error) {
	b, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return nil, err
	}
	b.Color = c
	b.LineStyle.Width = 0
	b.Offset = offset
	return b, nil
}

// valueLabels writes each value just above at (its bar, or its range bar).
func valueLabels(vals, at plotter.Values, offset vg.Length, format func(float64) string) (*plotter.Labels, error) {
	xyl := plotter.XYLabels{XYs: make(plotter.XYs, len(vals)), Labels: make([]string, len(vals))}
	for i, v := range vals {
		xyl.XYs[i] = plotter.XY{X: float64(i), Y: at[i]}
		xyl.Labels[i] = format(v)
	}
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XCenter
		l.TextStyle[i].Font.Size = 9
	}
	l.Offset = vg.Point{X: offset, Y: vg.Points(2)}
	return l, nil
}

// setYMax leaves headroom above the tallest bar for its label.
func setYMax(p *plot.Plot, series ...plotter.Values) {
	maxV := 0.0
	for _, s := range series {
		for _, v := range s {
			maxV = math.Max(maxV, v)
		}
	}
	if maxV <= 0 {
		maxV = 1
	}
	p.Y.Max = maxV * 1.12
}

func fmtCount(v float64) string {
	switch {
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtLatency(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
