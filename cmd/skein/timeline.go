package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// ANSI SGR codes.
const (
	bold   = "1"
	dim    = "2"
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

// style paints text with ANSI colours, or leaves it plain.
type style struct{ color bool }

func (s style) paint(code, text string) string {
	if !s.color || code == "" || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(text string) string { return s.paint(bold, text) }

func (s style) status(status string) string { return s.paint(statusColor(status), status) }

func statusColor(status string) string {
	switch {
	case status == "completed" || status == "compensated" || strings.HasPrefix(status, "received"):
		return green
	case status == "failed" || status == "conflict" || status == "held" || status == "compensation_failed":
		return red
	case status == "cancelled" || status == "disposed":
		return dim
	}
	return yellow // pending, running, retrying, waiting, compensating
}

// Timeline glyphs.
const (
	glyphOK      = '█' // an attempt that succeeded
	glyphFailed  = '▒' // an attempt that failed
	glyphRunning = '▓' // an attempt still running (or cut off)
	glyphLost    = '╳' // an attempt whose executor was lost (interrupted)
	glyphPending = '·' // created or retrying, not running
	glyphSleep   = '─' // a sleep
	glyphHook    = '┈' // a hook waiting for payloads
	glyphPayload = '●' // a payload received
)

// paintKind is how the terminal draws a segment or mark of kind k.
func paintKind(k timeline.Kind) cell {
	switch k {
	case timeline.OK:
		return cell{glyphOK, green}
	case timeline.Failed:
		return cell{glyphFailed, red}
	case timeline.Running:
		return cell{glyphRunning, yellow}
	case timeline.Lost:
		return cell{glyphLost, red}
	case timeline.Pending:
		return cell{glyphPending, dim}
	case timeline.Sleep:
		return cell{glyphSleep, cyan}
	case timeline.Hook:
		return cell{glyphHook, yellow}
	case timeline.Payload:
		return cell{glyphPayload, green}
	case timeline.Conflict:
		return cell{'✗', red}
	}
	return cell{'?', ""}
}

// cell is one column of a timeline bar.
type cell struct {
	glyph rune
	color string
}

// childStep is the built-in step that starts a child run.
const childStep = timeline.ChildStep

// buildRows turns a run's log into timeline rows, in creation order, with
// user text made printable. Webhook tokens are redacted unless showTokens.
func buildRows(events []world.Event, showTokens bool) []*timeline.Row {
	return timeline.Build(events, timeline.Options{ShowTokens: showTokens, Name: safeName, Text: safeText, Duration: fmtDuration})
}

// timelineOptions says how to draw a timeline.
type timelineOptions struct {
	width      int // the bar's width in columns
	style      style
	showTokens bool // webhook tokens in full
}

// drawTimeline writes the run's timeline: one row per step, sleep and hook,
// a bar scaled to the run's duration (up to now for an unfinished run).
func drawTimeline(w io.Writer, run *world.Run, events []world.Event, now time.Time, o timelineOptions) {
	width, st := o.width, o.style
	rows := buildRows(events, o.showTokens)
	if len(rows) == 0 {
		fmt.Fprintln(w, "Timeline: no steps, sleeps or hooks yet")
		return
	}
	start, end := timeline.Span(rows, run, now)
	total := max(end.Sub(start), time.Millisecond)
	// Cell c covers [c, c+1) of width cells: a segment fills the cells it
	// overlaps, at least one.
	pos := func(t time.Time) float64 { return float64(t.Sub(start)) / float64(total) * float64(width) }
	clamp := func(c int) int { return min(max(c, 0), width-1) }
	col := func(t time.Time) int { return clamp(int(math.Floor(pos(t)))) }
	cols := func(from, to time.Time) (int, int) {
		first := col(from)
		return first, max(first, clamp(int(math.Ceil(pos(to)))-1))
	}

	nameW, tryW, statusW, lost := len("STEP"), len("TRY"), len("STATUS"), false
	for _, r := range rows {
		r.Name = clip(r.Name, 44)
		nameW = max(nameW, utf8.RuneCountInString(r.Name))
		tryW = max(tryW, len(r.Try()))
		statusW = max(statusW, utf8.RuneCountInString(r.Status))
		lost = lost || r.Lost > 0
	}
	axis := fmtDuration(total)
	fmt.Fprintf(w, "%s\n", st.bold("Timeline"))
	fmt.Fprintf(w, "  %-*s  %*s  %-*s  %s%*s  %s\n", nameW, "STEP", tryW, "TRY", statusW, "STATUS", "0s", width-2, axis, "TOOK")
	for _, r := range rows {
		cells := make([]cell, width)
		for i := range cells {
			cells[i].glyph = ' '
		}
		// Pending time first: an attempt, however short, stays visible.
		// Each later segment starts at least one cell after the one before
		// it while there is room, so that two short attempts falling in
		// one cell (a failed one and its retry, in a long run) both show.
		for _, pending := range []bool{true, false} {
			next := 0
			for _, s := range r.Segs {
				if (s.Kind == timeline.Pending) != pending {
					continue
				}
				first, last := cols(s.From, s.To)
				if !pending {
					first = clamp(max(first, next))
					last = max(last, first)
					next = first + 1
				}
				for c := first; c <= last; c++ {
					cells[c] = paintKind(s.Kind)
				}
			}
		}
		for _, m := range r.Marks {
			cells[col(m.At)] = paintKind(m.Kind)
		}
		took := fmtDuration(r.Took())
		line := fmt.Sprintf("  %-*s  %*s  %s  %s  %-6s", nameW, r.Name, tryW, r.Try(),
			st.paint(statusColor(r.Status), fmt.Sprintf("%-*s", statusW, r.Status)), renderBar(cells, st), took)
		if r.Note != "" {
			line += "  " + st.paint(dim, clip(r.Note, 60))
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	legend := fmt.Sprintf("  %c attempt ok  %c attempt failed  %c running  %c pending  %c sleep  %c waiting for a payload  %c payload",
		glyphOK, glyphFailed, glyphRunning, glyphPending, glyphSleep, glyphHook, glyphPayload)
	if lost {
		legend += fmt.Sprintf("  %c executor lost (TRY +n lost)", glyphLost)
	}
	fmt.Fprintln(w, st.paint(dim, legend))
}

// renderBar writes cells, painting runs of one colour together.
func renderBar(cells []cell, st style) string {
	var b, run strings.Builder
	color := ""
	flush := func() {
		b.WriteString(st.paint(color, run.String()))
		run.Reset()
	}
	for _, c := range cells {
		if c.color != color {
			flush()
			color = c.color
		}
		run.WriteRune(c.glyph)
	}
	flush()
	return b.String()
}
