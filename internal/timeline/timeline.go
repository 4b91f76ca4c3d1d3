package timeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/world"
)

// Kind is what a segment or a mark stands for.
type Kind int

// Segment and mark kinds.
const (
	// OK is an attempt that succeeded.
	OK Kind = iota + 1
	// Failed is an attempt that failed.
	Failed
	// Running is an attempt still running (or cut off by the run's end).
	Running
	// Lost is an attempt whose executor was lost (interrupted).
	Lost
	// Pending is a step created or retrying, not running.
	Pending
	// Sleep is a sleep.
	Sleep
	// Hook is a hook waiting for payloads.
	Hook
	// Payload marks a payload a hook received.
	Payload
	// Conflict marks a hook whose token another run held.
	Conflict
)

// String names the kind in lower case ("ok", "pending", ...), as CSS
// classes use it.
func (k Kind) String() string {
	switch k {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Running:
		return "running"
	case Lost:
		return "lost"
	case Pending:
		return "pending"
	case Sleep:
		return "sleep"
	case Hook:
		return "hook"
	case Payload:
		return "payload"
	case Conflict:
		return "conflict"
	}
	return "unknown"
}

// Segment is a stretch of a row's bar.
type Segment struct {
	From, To time.Time
	Kind     Kind
}

// Mark is an instant on a row's bar.
type Mark struct {
	At   time.Time
	Kind Kind
}

// Row is one line of the timeline: a step, a sleep or a hook.
type Row struct {
	Name    string
	Attempt int // steps only: the attempt as retries count it
	Lost    int // steps: attempts interrupted by a lost executor
	Status  string
	Note    string // the last error, or the child run a child step started
	Segs    []Segment
	Marks   []Mark
	// Open is the segment still going at the end of the log.
	Open  *Segment
	First time.Time
	Last  time.Time
	// Payloads counts the payloads a hook received.
	Payloads int
	// FirstPayload is when a hook got its first payload: its wait's end.
	FirstPayload time.Time
	// Step is the step's name and Input its input (steps only): rows of a
	// step called more than once (a fan-out) show their input to tell
	// them apart.
	Step  string
	Input []byte
	// Compensates is, on a compensation's row, the name of the row of the
	// step it undoes; "" on other rows. A compensation has a row of its
	// own, added when its first attempt starts: its attempts, retries and
	// outcome read as a step's do.
	Compensates string
}

// Took is how long the row's step, sleep or hook wait lasted.
func (r *Row) Took() time.Duration {
	if !r.FirstPayload.IsZero() {
		return r.FirstPayload.Sub(r.First)
	}
	return r.Last.Sub(r.First)
}

// Try is the row's attempt column: the attempt as retries count it, and
// the attempts interrupted by a lost executor ("1 (+1 lost)"); "-" for
// rows that are not steps or never started.
func (r *Row) Try() string {
	switch {
	case r.Attempt <= 0:
		return "-"
	case r.Lost > 0:
		return fmt.Sprintf("%d (+%d lost)", r.Attempt, r.Lost)
	}
	return fmt.Sprint(r.Attempt)
}

func (r *Row) begin(at time.Time, k Kind) {
	r.End(at)
	r.Open = &Segment{From: at, Kind: k}
}

// started begins an attempt. An attempt still running is one whose
// executor was lost: the new one took the step over.
func (r *Row) started(at time.Time, attempt, interrupted int) {
	if interrupted > r.Lost && r.Open != nil && r.Open.Kind == Running {
		r.Open.Kind = Lost
	}
	r.Lost = max(r.Lost, interrupted)
	r.Attempt, r.Status = attempt-interrupted, "running"
	r.begin(at, Running)
}

// mark sets the kind of the open segment, if any (an attempt's outcome;
// a log that does not show the attempt's start has none).
func (r *Row) mark(k Kind) {
	if r.Open != nil {
		r.Open.Kind = k
	}
}

// End closes the open segment at at.
func (r *Row) End(at time.Time) {
	if r.Open != nil {
		r.Open.To = at
		r.Segs = append(r.Segs, *r.Open)
		r.Open = nil
	}
	r.Last = at
}

// Options says how Build names things.
type Options struct {
	// ShowTokens shows webhook tokens in full; by default they are
	// redacted (redact.Token), as logs show them.
	ShowTokens bool
	// Name and Text render user-controlled identifiers (step names,
	// tokens) and free text (errors, inputs) for the medium; nil leaves
	// them as they are.
	Name, Text func(string) string
	// Duration formats a sleep's length (default FormatDuration).
	Duration func(time.Duration) string
}

func (o *Options) defaults() {
	if o.Name == nil {
		o.Name = func(s string) string { return s }
	}
	if o.Text == nil {
		o.Text = func(s string) string { return s }
	}
	if o.Duration == nil {
		o.Duration = FormatDuration
	}
}

// ChildStep is the built-in step that starts a child run.
const ChildStep = "skein.start-child"

// Build turns a run's log into timeline rows, in creation order.
func Build(events []world.Event, o Options) []*Row {
	o.defaults()
	b := builder{o: o, byID: map[string]*Row{}, comps: map[string]*Row{}}
	for _, ev := range events {
		b.event(ev)
	}
	nameFanOuts(b.rows, o)
	return b.rows
}

type builder struct {
	o    Options
	rows []*Row
	byID map[string]*Row
	// comps are the compensation rows by the ID of the step they undo.
	comps map[string]*Row
}

func (b *builder) add(id string, r *Row) {
	b.rows = append(b.rows, r)
	b.byID[id] = r
}

func (b *builder) event(ev world.Event) {
	at, o := ev.CreatedAt, b.o
	r := b.byID[ev.CorrelationID]
	switch d := ev.Data.(type) {
	case *world.StepCreated:
		r = &Row{Name: o.Name(d.StepName), Status: "pending", First: at, Step: d.StepName, Input: d.Input}
		if d.StepName == ChildStep {
			r.Name = "child " + childWorkflow(d.Input, o)
		}
		r.begin(at, Pending)
		b.add(ev.CorrelationID, r)
	case *world.StepStarted:
		if r != nil {
			r.started(at, d.Attempt, d.Interrupted)
		}
	case *world.StepRetrying:
		if r != nil {
			r.mark(Failed)
			r.Status, r.Note = "retrying", o.Text(d.Error.Message)
			r.begin(at, Pending)
		}
	case *world.StepCompleted:
		if r != nil {
			r.mark(OK)
			r.Status = "completed"
			r.End(at)
			if r.Step == ChildStep {
				r.Note = "run " + childRunID(d.Result, o)
			}
		}
	case *world.StepFailed:
		if r != nil {
			r.mark(Failed)
			r.Status, r.Note = "failed", o.Text(d.Error.Message)
			r.End(at)
		}
	case *world.WaitCreated:
		// The wait was recorded a commit after its duration started.
		span := d.ResumeAt.Sub(at)
		if span < time.Second {
			span = span.Round(10 * time.Millisecond)
		} else {
			span = span.Round(100 * time.Millisecond)
		}
		r = &Row{Name: "sleep " + o.Duration(span), Status: "waiting", First: at}
		r.begin(at, Sleep)
		b.add(ev.CorrelationID, r)
	case *world.WaitCompleted:
		if r != nil {
			r.Status = "completed"
			r.End(at)
		}
	case *world.HookCreated:
		b.hookCreated(ev, d)
	case *world.HookConflict:
		r = &Row{Name: "hook " + o.Name(d.Token), Status: "conflict", First: at, Last: at, Note: "token held by run " + o.Name(d.ConflictingRunID)}
		r.Marks = append(r.Marks, Mark{At: at, Kind: Conflict})
		b.add(ev.CorrelationID, r)
	case *world.HookReceived:
		if r != nil {
			r.received(at)
		}
	case *world.HookDisposed:
		if r != nil {
			if r.Payloads == 0 {
				r.Status = "disposed"
			}
			r.End(at)
		}
	case *world.CompStarted, *world.CompRetryScheduled, *world.CompSucceeded, *world.CompFailed:
		b.comp(ev, r)
	case *world.RunCancelled, *world.RunFailed, *world.RunCompleted:
		// What was still going ends with the run, as it stood.
		endOpen(b.rows, at, ev.Type())
	}
}

func (b *builder) hookCreated(ev world.Event, d *world.HookCreated) {
	token := b.o.Name(d.Token)
	if d.IsWebhook && !b.o.ShowTokens {
		token = redact.Token(d.Token)
	}
	r := &Row{Name: "hook " + token, Status: "waiting", First: ev.CreatedAt}
	if d.IsWebhook {
		r.Name = "webhook " + token
	}
	r.begin(ev.CreatedAt, Hook)
	b.add(ev.CorrelationID, r)
}

func (r *Row) received(at time.Time) {
	r.Payloads++
	r.Status = "received"
	if r.Payloads > 1 {
		r.Status = fmt.Sprintf("received ×%d", r.Payloads)
	}
	r.Marks = append(r.Marks, Mark{At: at, Kind: Payload})
	if r.Payloads == 1 {
		r.FirstPayload = at
	}
}

// childWorkflow is the workflow a child-start step's input names.
func childWorkflow(input []byte, o Options) string {
	var in struct {
		Workflow string `json:"workflow"`
	}
	if json.Unmarshal(input, &in) != nil || in.Workflow == "" {
		return "run"
	}
	return o.Name(in.Workflow)
}

// childRunID is the run ID a child-start step returned.
func childRunID(result []byte, o Options) string {
	var id string
	if json.Unmarshal(result, &id) != nil {
		return "?"
	}
	return o.Name(id)
}

// endOpen ends the rows still going when their run ended with typ: on a
// cancellation or a failure, steps pending (no attempt starts after the
// end); on any end, sleeps and hooks waiting (a timer a Select did not
// need) stop there, marked as the run left them.
// A step running is marked so but its row stays open until the step
// records its outcome (a cancelled run's step records the cancellation),
// as do compensations.
func endOpen(rows []*Row, at time.Time, typ world.EventType) {
	how := "cancelled"
	if typ != world.EventRunCancelled {
		how = "abandoned"
	}
	for _, r := range rows {
		if r.Open == nil || r.Compensates != "" {
			continue // compensations go on after the run's end
		}
		if typ == world.EventRunCompleted && r.Status != "waiting" {
			continue // a completed run's steps finish as they would have
		}
		switch r.Status {
		case "running":
			// Its outcome, if it records one, ends the row.
			r.Status = how + " (running)"
			continue
		case "pending", "retrying":
			r.Status = how + " (" + r.Status + ")"
		case "waiting":
			r.Status = how
		default:
			continue
		}
		r.End(at)
	}
}

// nameFanOuts adds a short input to the rows of steps created more than
// once under one name, so that the branches of a fan-out can be told apart.
func nameFanOuts(rows []*Row, o Options) {
	count := map[string]int{}
	for _, r := range rows {
		if r.Step != "" && r.Step != ChildStep {
			count[r.Step]++
		}
	}
	for _, r := range rows {
		if count[r.Step] > 1 && len(r.Input) > 0 {
			r.Name += " " + o.Text(Clip(string(r.Input), 20))
		}
	}
}

// Span is the time the chart covers: from the run's creation to its end,
// or to now for an unfinished run, stretched to the last row's end. Rows
// still open end at that end.
func Span(rows []*Row, run *world.Run, now time.Time) (start, end time.Time) {
	start, end = run.CreatedAt, now
	if run.Status.Terminal() && !run.CompletedAt.IsZero() {
		end = run.CompletedAt
		if !run.Deactivated() && compensating(rows) {
			end = later(end, now) // compensations go on after the end
		}
	}
	for _, r := range rows {
		if r.Open != nil {
			r.End(end)
		}
		if r.Last.After(end) {
			end = r.Last
		}
	}
	return start, end
}

// compensating reports whether a compensation's row is still open.
func compensating(rows []*Row) bool {
	for _, r := range rows {
		if r.Open != nil && r.Compensates != "" {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Clip shortens s to n runes, ending it with "…" when cut.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// FormatDuration keeps durations short: 850ms, 3.42s, 2m5s, 26h3m.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}
