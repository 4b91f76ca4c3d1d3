package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

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
	case status == "completed" || strings.HasPrefix(status, "received"):
		return green
	case status == "failed" || status == "conflict" || status == "held":
		return red
	case status == "cancelled" || status == "disposed":
		return dim
	}
	return yellow // pending, running, retrying, waiting
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

type segment struct {
	from, to time.Time
	glyph    rune
	color    string
}

type mark struct {
	at    time.Time
	glyph rune
	color string
}

// row is one line of the timeline: a step, a sleep or a hook.
type row struct {
	name    string
	attempt int // steps only
	lost    int // steps: attempts interrupted by a lost executor
	status  string
	note    string // the last error
	segs    []segment
	marks   []mark
	open    *segment // the segment still going at the end of the log
	first   time.Time
	last    time.Time
	payload int
	// firstPayload is when a hook got its first payload: its wait's end.
	firstPayload time.Time
	// step is the step's name and input (steps only): rows of a step called
	// more than once (a fan-out) show their input to tell them apart.
	step  string
	input []byte
}

// took is how long the row's step, sleep or hook wait lasted.
func (r *row) took() time.Duration {
	if !r.firstPayload.IsZero() {
		return r.firstPayload.Sub(r.first)
	}
	return r.last.Sub(r.first)
}

func (r *row) begin(at time.Time, glyph rune, color string) {
	r.end(at)
	r.open = &segment{from: at, glyph: glyph, color: color}
}

// started begins an attempt. An attempt still running is one whose
// executor was lost: the new one took the step over.
func (r *row) started(at time.Time, d *world.StepStarted) {
	if d.Interrupted > r.lost && r.open != nil && r.open.glyph == glyphRunning {
		r.open.glyph, r.open.color = glyphLost, red
	}
	r.lost = max(r.lost, d.Interrupted)
	r.attempt, r.status = d.Attempt-d.Interrupted, "running" // the attempt as retries count it
	r.begin(at, glyphRunning, yellow)
}

func (r *row) end(at time.Time) {
	if r.open != nil {
		r.open.to = at
		r.segs = append(r.segs, *r.open)
		r.open = nil
	}
	r.last = at
}

// buildRows turns a run's log into timeline rows, in creation order.
// Webhook tokens are redacted unless showTokens.
func buildRows(events []world.Event, showTokens bool) []*row {
	var rows []*row
	byID := make(map[string]*row)
	add := func(id string, r *row) {
		rows = append(rows, r)
		byID[id] = r
	}
	for _, ev := range events {
		at := ev.CreatedAt
		r := byID[ev.CorrelationID]
		switch d := ev.Data.(type) {
		case *world.StepCreated:
			r = &row{name: safeName(d.StepName), status: "pending", first: at, step: d.StepName, input: d.Input}
			if d.StepName == childStep {
				r.name = "child " + childWorkflow(d.Input)
			}
			r.begin(at, glyphPending, dim)
			add(ev.CorrelationID, r)
		case *world.StepStarted:
			if r != nil {
				r.started(at, d)
			}
		case *world.StepRetrying:
			if r != nil {
				r.open.glyph, r.open.color = glyphFailed, red
				r.status, r.note = "retrying", safeText(d.Error.Message)
				r.begin(at, glyphPending, dim)
			}
		case *world.StepCompleted:
			if r != nil {
				r.open.glyph, r.open.color = glyphOK, green
				r.status = "completed"
				r.end(at)
				if r.step == childStep {
					r.note = "run " + childRunID(d.Result)
				}
			}
		case *world.StepFailed:
			if r != nil {
				r.open.glyph, r.open.color = glyphFailed, red
				r.status, r.note = "failed", safeText(d.Error.Message)
				r.end(at)
			}
		case *world.WaitCreated:
			// The wait was recorded a commit after its duration started.
			span := d.ResumeAt.Sub(at)
			if span < time.Second {
				span = span.Round(10 * time.Millisecond)
			} else {
				span = span.Round(100 * time.Millisecond)
			}
			r = &row{name: "sleep " + fmtDuration(span), status: "waiting", first: at}
			r.begin(at, glyphSleep, cyan)
			add(ev.CorrelationID, r)
		case *world.WaitCompleted:
			if r != nil {
				r.status = "completed"
				r.end(at)
			}
		case *world.HookCreated:
			r = &row{name: "hook " + shownToken(d.Token, d.IsWebhook, showTokens), status: "waiting", first: at}
			if d.IsWebhook {
				r.name = "webhook " + shownToken(d.Token, true, showTokens)
			}
			r.begin(at, glyphHook, yellow)
			add(ev.CorrelationID, r)
		case *world.HookConflict:
			r = &row{name: "hook " + safeName(d.Token), status: "conflict", first: at, last: at, note: "token held by run " + safeName(d.ConflictingRunID)}
			r.marks = append(r.marks, mark{at: at, glyph: '✗', color: red})
			add(ev.CorrelationID, r)
		case *world.HookReceived:
			if r != nil {
				r.payload++
				r.status = "received"
				if r.payload > 1 {
					r.status = fmt.Sprintf("received ×%d", r.payload)
				}
				r.marks = append(r.marks, mark{at: at, glyph: glyphPayload, color: green})
				if r.payload == 1 {
					r.firstPayload = at
				}
			}
		case *world.HookDisposed:
			if r != nil {
				if r.payload == 0 {
					r.status = "disposed"
				}
				r.end(at)
			}
		case *world.RunCancelled, *world.RunFailed:
			// What was still going ends with the run, as it stood.
			endOpen(rows, at, ev.Type())
		}
	}
	nameFanOuts(rows)
	return rows
}

// childStep is the built-in step that starts a child run.
const childStep = "skein.start-child"

// childWorkflow is the workflow a child-start step's input names.
func childWorkflow(input []byte) string {
	var in struct {
		Workflow string `json:"workflow"`
	}
	if json.Unmarshal(input, &in) != nil || in.Workflow == "" {
		return "run"
	}
	return safeName(in.Workflow)
}

// childRunID is the run ID a child-start step returned.
func childRunID(result []byte) string {
	var id string
	if json.Unmarshal(result, &id) != nil {
		return "?"
	}
	return safeName(id)
}

// endOpen ends the rows still going when their run ended with typ (a
// cancellation or a failure): steps running or pending, sleeps and hooks
// waiting stop there, marked as the run left them.
func endOpen(rows []*row, at time.Time, typ world.EventType) {
	how := "cancelled"
	if typ == world.EventRunFailed {
		how = "abandoned"
	}
	for _, r := range rows {
		if r.open == nil {
			continue
		}
		switch r.status {
		case "running":
			r.status = how + " (running)"
		case "pending", "retrying":
			r.status = how + " (" + r.status + ")"
		case "waiting":
			r.status = how
		default:
			continue
		}
		r.end(at)
	}
}

// nameFanOuts adds a short input to the rows of steps created more than
// once under one name, so that the branches of a fan-out can be told apart.
func nameFanOuts(rows []*row) {
	count := map[string]int{}
	for _, r := range rows {
		if r.step != "" && r.step != childStep {
			count[r.step]++
		}
	}
	for _, r := range rows {
		if count[r.step] > 1 && len(r.input) > 0 {
			r.name += " " + safeText(clip(string(r.input), 20))
		}
	}
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
	start, end := run.CreatedAt, now
	if run.Status.Terminal() && !run.CompletedAt.IsZero() {
		end = run.CompletedAt
	}
	for _, r := range rows {
		if r.open != nil {
			r.end(end)
		}
		if r.last.After(end) {
			end = r.last
		}
	}
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
		r.name = clip(r.name, 44)
		nameW = max(nameW, utf8.RuneCountInString(r.name))
		tryW = max(tryW, len(r.try()))
		statusW = max(statusW, utf8.RuneCountInString(r.status))
		lost = lost || r.lost > 0
	}
	axis := fmtDuration(total)
	fmt.Fprintf(w, "%s\n", st.bold("Timeline"))
	fmt.Fprintf(w, "  %-*s  %*s  %-*s  %s%*s  %s\n", nameW, "STEP", tryW, "TRY", statusW, "STATUS", "0s", width-2, axis, "TOOK")
	for _, r := range rows {
		cells := make([]segment, width)
		for i := range cells {
			cells[i].glyph = ' '
		}
		// Pending time first: an attempt, however short, stays visible.
		for _, pending := range []bool{true, false} {
			for _, s := range r.segs {
				if (s.glyph == glyphPending) != pending {
					continue
				}
				first, last := cols(s.from, s.to)
				for c := first; c <= last; c++ {
					cells[c] = s
				}
			}
		}
		for _, m := range r.marks {
			cells[col(m.at)] = segment{glyph: m.glyph, color: m.color}
		}
		took := fmtDuration(r.took())
		line := fmt.Sprintf("  %-*s  %*s  %s  %s  %-6s", nameW, r.name, tryW, r.try(),
			st.paint(statusColor(r.status), fmt.Sprintf("%-*s", statusW, r.status)), renderBar(cells, st), took)
		if r.note != "" {
			line += "  " + st.paint(dim, clip(r.note, 60))
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

// try is the row's TRY column: the attempt as retries count it, and the
// attempts interrupted by a lost executor ("1 (+1 lost)"); "-" for rows
// that are not steps or never started.
func (r *row) try() string {
	switch {
	case r.attempt <= 0:
		return "-"
	case r.lost > 0:
		return fmt.Sprintf("%d (+%d lost)", r.attempt, r.lost)
	}
	return fmt.Sprint(r.attempt)
}

// renderBar writes cells, painting runs of one colour together.
func renderBar(cells []segment, st style) string {
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
