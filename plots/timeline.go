package plots

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/report"
)

// Timeline geometry, in inches and in lane units (one lane per client,
// lanes one unit apart on the y axis).
const (
	tlWidth      = 14.0 // inches
	tlLaneHeight = 0.6  // inches per lane
	tlDataWidth  = 12.6 // approximate width of the data area, for label layout
	tlLabelRow   = 13.0 // points per row of fault labels above the lanes
	tlCycleStrip = 0.4  // lane units below the lanes for cycle labels
	tlMaxHeader  = 6    // rows of fault labels at most
	tlMaxLabels  = 40   // findings labelled by name; beyond, only marked
	tlDPI        = 110
)

// timeline is what timeline.png shows.
type timeline struct {
	sp       report.Span
	title    string
	lanes    []string
	lane     map[string]int // client -> lane index, 0 at the top
	holds    []checker.Hold
	faults   []checker.Window
	findings []checker.Finding
	cycles   []report.CycleStart
	writes   []mark // accepted writes to the resource under a hold
	stale    []mark // accepted writes after the writer's hold had ended
	refused  []mark // accesses the resource refused (fencing)
	crashes  []mark
	fcolor   map[string]color.NRGBA // fault name -> band colour
	fnames   []string               // fault names in order of appearance
	header   []headerLabel          // labels above the lanes
	rows     int                    // rows of header labels
}

// mark is an instant in a lane.
type mark struct {
	lane int
	t    int64
}

// headerLabel is a label above the lanes, at a time, in a row.
type headerLabel struct {
	t    int64
	text string
	col  color.Color
	row  int
}

func newTimeline(meta report.Meta, events []history.Event, res *checker.Result) *timeline {
	tl := &timeline{sp: report.RunSpan(events, res), lane: map[string]int{}, fcolor: map[string]color.NRGBA{}}
	tl.lanes = report.Clients(events, res)
	for i, c := range tl.lanes {
		tl.lane[c] = i
	}
	tl.cycles = report.Cycles(events)
	holdEnd := map[string]int64{}
	if res != nil {
		for _, h := range res.Holds {
			holdEnd[h.Lease] = h.End
		}
	}
	for _, e := range events {
		l, ok := tl.lane[e.Process]
		if !ok {
			continue
		}
		switch {
		case e.Kind == history.Access && e.Rejected:
			tl.refused = append(tl.refused, mark{l, e.Time})
		case e.Kind == history.Access && e.Access == "write":
			if end, ok := holdEnd[e.Lease]; ok && e.Time > end {
				tl.stale = append(tl.stale, mark{l, e.Time})
			} else {
				tl.writes = append(tl.writes, mark{l, e.Time})
			}
		case e.Kind == history.Note && e.Op == "crashed":
			tl.crashes = append(tl.crashes, mark{l, e.Time})
		}
	}
	verdict := report.VerdictOf(res)
	if res != nil {
		tl.holds, tl.faults, tl.findings = res.Holds, res.Faults, res.Findings
	}
	for _, w := range tl.faults {
		if _, ok := tl.fcolor[w.Fault]; !ok {
			tl.fcolor[w.Fault] = faultPalette[len(tl.fnames)%len(faultPalette)]
			tl.fnames = append(tl.fnames, w.Fault)
		}
	}
	match := "matches the expectation"
	if !meta.Matched {
		match = "does NOT match the expectation (" + report.ClassList(meta.Expect) + ")"
	}
	tl.title = fmt.Sprintf("%s × %s — verdict: %s, %s", meta.Scenario, meta.Lock, strings.ToUpper(verdict), match)
	if meta.Interrupted {
		tl.title += " — INTERRUPTED"
	}
	sub := fmt.Sprintf("backend %s · %s · %s · %s · %s", report.OrDash(meta.Backend), report.Plural(len(tl.lanes), "client"),
		report.Plural(len(tl.holds), "hold"), report.Plural(len(tl.faults), "fault window"), report.Plural(len(tl.findings), "finding"))
	if meta.RunID != "" {
		sub += " · run " + meta.RunID
	}
	tl.title += "\n" + sub
	tl.layoutHeader()
	return tl
}

// layoutHeader places the fault (and stuck) labels in rows above the lanes
// so that they do not overprint each other; labels that find no room are
// left out.
func (tl *timeline) layoutHeader() {
	for _, w := range tl.faults {
		s := report.FaultName(w)
		if w.End == 0 {
			s += " (never healed)"
		}
		tl.header = append(tl.header, headerLabel{t: w.Start, text: s, col: darken(tl.fcolor[w.Fault])})
	}
	for _, f := range tl.findings {
		if f.Class == checker.ClassStuck {
			tl.header = append(tl.header, headerLabel{t: f.From, text: "stuck " + report.Dur(f.To-f.From), col: stuckEdge})
		}
	}
	secs := max(tl.sp.Sec(tl.sp.End), 1e-9)
	perSec := tlDataWidth * 72 / secs // points per second, approximately
	var rowEnd []float64              // per row: x (points) where its last label ends
	for i := range tl.header {
		h := &tl.header[i]
		w := float64(labelStyle(10, true, nil).Width(h.text)) + 8
		x := min(tl.sp.Sec(h.t)*perSec, tlDataWidth*72-w)
		row := -1
		for r, end := range rowEnd {
			if end <= x {
				row = r
				break
			}
		}
		if row < 0 && len(rowEnd) < tlMaxHeader {
			row = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		}
		h.row = row // -1: no room; the band's colour and the legend still tell
		if row >= 0 {
			rowEnd[row] = x + w
		}
	}
	tl.rows = len(rowEnd)
}

// headerUnits is the height of the label strip above the lanes, in lanes.
func (tl *timeline) headerUnits() float64 {
	return (float64(tl.rows)*tlLabelRow + 4) / (tlLaneHeight * 72)
}

// laneY is the centre of a lane on the y axis; lane 0 is at the top.
func (tl *timeline) laneY(i int) float64 { return float64(len(tl.lanes) - 1 - i) }

// DataRange implements plot.DataRanger.
func (tl *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmax = tl.sp.Sec(tl.sp.End)
	if xmax <= 0 {
		xmax = 1
	}
	n := float64(max(len(tl.lanes), 1))
	return 0, xmax * 1.005, -0.5 - tlCycleStrip, n - 0.5 + tl.headerUnits()
}

// writeTimeline renders timeline.png.
func writeTimeline(path string, meta report.Meta, events []history.Event, res *checker.Result) error {
	tl := newTimeline(meta, events, res)
	p := plot.New()
	p.Title.Text = tl.title
	setFont(&p.Title.TextStyle, 15, true)
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = "seconds since the first event"
	setFont(&p.X.Label.TextStyle, 12, false)
	setFont(&p.X.Tick.Label, 11, false)
	p.X.Tick.Marker = secondsTicks{}
	p.X.Padding, p.Y.Padding = 0, 0
	ticks := make(plot.ConstantTicks, len(tl.lanes))
	for i, c := range tl.lanes {
		ticks[i] = plot.Tick{Value: tl.laneY(i), Label: c}
	}
	p.Y.Tick.Marker = ticks
	setFont(&p.Y.Tick.Label, 13, true)
	p.Y.Tick.Length, p.Y.Tick.Width, p.Y.Width = 0, 0, 0
	p.Y.Label.Text = "client"
	setFont(&p.Y.Label.TextStyle, 12, false)

	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	grid.Vertical.Color = color.Gray{Y: 225}
	p.Add(tl, grid) // tl first: its DataRange sets the axes
	p.Add(tl.foreground())

	legend := tl.legend()
	legendH := legend.height(vg.Length(tlWidth)*vg.Inch - 2*vg.Inch)
	_, _, ymin, ymax := tl.DataRange()
	dataH := vg.Length((ymax-ymin)*tlLaneHeight) * vg.Inch
	h := dataH + vg.Points(95) + legendH
	cv := vgimg.NewWith(vgimg.UseWH(vg.Length(tlWidth)*vg.Inch, h), vgimg.UseDPI(tlDPI))
	dc := draw.New(cv)
	top := draw.Crop(dc, vg.Points(6), -vg.Points(14), legendH+vg.Points(6), -vg.Points(6))
	p.Draw(top)
	da := p.DataCanvas(top)
	legend.draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: da.Min.X, Y: dc.Min.Y + vg.Points(4)},
		Max: vg.Point{X: da.Max.X, Y: dc.Min.Y + legendH},
	}})
	return writePNG(path, cv)
}

// legend lists what the timeline's marks mean; optional marks only appear
// when the run has them.
func (tl *timeline) legend() *legend {
	l := &legend{}
	l.add("lock held (one colour per client)", stripesSwatch(len(tl.lanes)))
	var ragged, stale bool
	for _, h := range tl.holds {
		ragged = ragged || h.EndReason == "expired" || h.EndReason == "crashed"
		stale = stale || h.LastAccess > h.End
	}
	if ragged {
		l.add("hold ended by expiry or crash", lineSwatch(draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}))
	}
	if stale || len(tl.holds) == 0 {
		col := clientColor(0)
		l.add("used the resource after its hold ended", boxSwatch(pale(col), &draw.LineStyle{Color: col, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}, 0.4))
	}
	if len(tl.stale) > 0 {
		l.add("write after the writer's hold ended", func(c *draw.Canvas, r vg.Rectangle) {
			staleWrite(c, (r.Min.X+r.Max.X)/2, (r.Min.Y+r.Max.Y)/2)
		})
	}
	if len(tl.writes) > 0 {
		l.add("write to the resource", lineSwatch(draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(0.8)}))
	}
	if len(tl.refused) > 0 {
		l.add("access refused by fencing", func(c *draw.Canvas, r vg.Rectangle) {
			c.DrawGlyph(draw.GlyphStyle{Color: fencedEdge, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2})
		})
	}
	for _, name := range tl.fnames {
		col := tl.fcolor[name]
		l.add("fault: "+name, boxSwatch(col, &draw.LineStyle{Color: darken(col), Width: vg.Points(1)}, 1))
	}
	n := report.CountClasses(tl.findings)
	l.add("OVERLAP: two clients held the lock at once", boxSwatch(overlapFill, &draw.LineStyle{Color: overlapEdge, Width: vg.Points(1.5)}, 1))
	if n[checker.ClassFenced] > 0 {
		l.add("overlap made harmless by fencing", boxSwatch(fencedFill, &draw.LineStyle{Color: fencedEdge, Width: vg.Points(1.5)}, 1))
	}
	if n[checker.ClassCorruption] > 0 {
		l.add("lost update (corruption)", crossSwatch(overlapEdge))
	}
	if n[checker.ClassStuck] > 0 {
		l.add("stuck: nobody could acquire", boxSwatch(stuckFill, nil, 1))
	}
	if len(tl.crashes) > 0 {
		l.add("client crashed", crossSwatch(color.Black))
	}
	if len(tl.cycles) > 0 {
		l.add("cycle start", lineSwatch(draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}))
	}
	return l
}
