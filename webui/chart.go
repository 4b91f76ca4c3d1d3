package webui

import (
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// chartWidth is the width of a bar's SVG view box; segments are placed in
// it, and the SVG stretches to the column.
const chartWidth = 1000

// chart is the run's Gantt timeline: the model `skein runs show` draws,
// laid out as SVG rectangles (attributes, not inline styles, so that the
// page's Content-Security-Policy allows them).
type chart struct {
	Axis string
	Rows []chartRow
	Lost bool
}

type chartRow struct {
	Name, Try, Status, Note, Took string
	StatusClass                   string
	Bars                          []chartBar
	// Comp marks a compensation's row.
	Comp bool
}

type chartBar struct {
	Kind     string
	X, Width float64
	Title    string
}

func newChart(run *world.Run, events []world.Event, now time.Time) *chart {
	rows := timeline.Build(events, timeline.Options{})
	if len(rows) == 0 {
		return nil
	}
	start, end := timeline.Span(rows, run, now)
	total := max(end.Sub(start), time.Millisecond)
	x := func(t time.Time) float64 {
		return min(max(float64(t.Sub(start))/float64(total)*chartWidth, 0), chartWidth)
	}
	c := &chart{Axis: fmtDuration(total)}
	for _, r := range rows {
		cr := chartRow{Name: r.Name, Try: r.Try(), Status: r.Status, Note: r.Note, Took: fmtDuration(r.Took()), StatusClass: statusClass(r.Status),
			Comp: r.Compensates != ""}
		c.Lost = c.Lost || r.Lost > 0
		for _, s := range r.Segs {
			// At least two units wide: a short attempt stays visible.
			from := x(s.From)
			w := max(x(s.To)-from, 2)
			cr.Bars = append(cr.Bars, chartBar{Kind: s.Kind.String(), X: min(from, chartWidth-w), Width: w,
				Title: s.Kind.String() + " " + fmtDuration(s.To.Sub(s.From)) + " from +" + fmtDuration(s.From.Sub(start))})
		}
		for _, m := range r.Marks {
			cr.Bars = append(cr.Bars, chartBar{Kind: m.Kind.String(), X: max(x(m.At)-3, 0), Width: 6,
				Title: m.Kind.String() + " at +" + fmtDuration(m.At.Sub(start))})
		}
		c.Rows = append(c.Rows, cr)
	}
	return c
}

// statusClass is the CSS class of a status's colour, as the CLI colours it.
func statusClass(status string) string {
	switch {
	case status == "completed" || status == "compensated" || len(status) >= 8 && status[:8] == "received":
		return "st-ok"
	case status == "failed" || status == "conflict" || status == "held" || status == "compensation_failed" || status == "compensation failed":
		return "st-bad"
	case status == "cancelled" || status == "disposed" || status == "not run":
		return "st-dim"
	}
	return "st-busy"
}
