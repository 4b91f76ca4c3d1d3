package worldtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// Subject is one fresh, empty World under test.
type Subject struct {
	World world.World
	// Consumer is the receiving side of World's queue, nil when the World has
	// none; the queue tests that need it are then skipped.
	Consumer world.Consumer
	// Clock is the clock World reads (its Config's Now: Clock.Now), which
	// the cases move to expire leases and pass retry times. When nil, the
	// cases that move it are skipped.
	Clock *Clock
	// AbandonClaim, for a World whose Enqueue claims an idempotency key
	// before it sends (and so may die in between), claims key as such an
	// Enqueue does and sends nothing, as a sender killed between the two
	// leaves it. The World must take the claim over once Clock has moved
	// an hour past it. Nil for a World whose Enqueue claims and sends in
	// one step; the case that needs it is then skipped.
	AbandonClaim func(ctx context.Context, key string) error
}

// Options configures Run.
type Options struct {
	// New returns a fresh, isolated World for one (sub)test; the suite registers
	// t.Cleanup to Close it, so New must not close it itself.
	New func(t *testing.T) Subject
	// Racers is the number of goroutines in race tests (default 16).
	Racers int
	// Slow scales the suite's real-time windows (queue delays and
	// visibility timeouts, watch and stream waits) for slower backends;
	// default 1. Leases and retry times are judged on Subject.Clock.
	Slow float64
	// Sealed says the World stores payloads sealed (an encrypting
	// wrapper): its runs count them sealed (Run.PayloadBytes), more than
	// the payloads its reads return measure.
	Sealed bool
}

func (o Options) withDefaults() Options {
	if o.Racers <= 0 {
		o.Racers = 16
	}
	if o.Slow <= 0 {
		o.Slow = 1
	}
	return o
}

// testCase is one conformance check; it gets its own World.
type testCase struct {
	name string
	fn   func(t *testing.T, f *fixture)
}

// group is a named set of cases, run as one subtest.
type group struct {
	name  string
	cases []testCase
}

func groups() []group {
	return []group{
		{"runs", runCases()},
		{"holds", holdCases()},
		{"steps", stepCases()},
		{"hooks", hookCases()},
		{"waits", waitCases()},
		{"commit", commitCases()},
		{"reads", readCases()},
		{"pagination", paginationCases()},
		{"races", raceCases()},
		{"leases", leaseCases()},
		{"queue", queueCases()},
		{"streams", streamCases()},
		{"patches", patchCases()},
		{"watch", watchCases()},
		{"attributes", attributeCases()},
		{"rest", restCases()},
		{"compensation", compensationCases()},
		{"limits", limitCases()},
	}
}

// Run runs the conformance suite: one subtest per group, and in it one
// parallel subtest per case, each with its own World from o.New.
func Run(t *testing.T, o Options) {
	t.Helper()
	if o.New == nil {
		t.Fatal("worldtest: Options.New is required")
	}
	o = o.withDefaults()
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(t, newFixture(t, o))
				})
			}
		})
	}
}

// ids mints the IDs the suite proposes (runs, steps, hooks, waits).
var ids = world.NewIDSource(nil, nil)

// fixture is one case's World and the helpers to drive it.
type fixture struct {
	t     *testing.T
	o     Options
	w     world.World
	c     world.Consumer
	clock *Clock
	ctx   context.Context
	// abandon is Subject.AbandonClaim.
	abandon func(ctx context.Context, key string) error
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	s := o.New(t)
	if s.World == nil {
		t.Fatal("worldtest: Options.New returned a Subject without a World")
	}
	t.Cleanup(func() {
		if err := s.World.Close(); err != nil {
			t.Errorf("World.Close: %v", err)
		}
	})
	return &fixture{t: t, o: o, w: s.World, c: s.Consumer, clock: s.Clock, ctx: t.Context(), abandon: s.AbandonClaim}
}

// d scales a real-time window by Options.Slow.
func (f *fixture) d(base time.Duration) time.Duration {
	return time.Duration(float64(base) * f.o.Slow)
}

// Leases and retry times are judged on the World's clock (Subject.Clock),
// which a case moves past them: a short one (shortTTL) is one the case
// will move past, a long one (longTTL) outlives every move. Neither can
// lapse while the machine is slow.
const (
	shortTTL = time.Minute
	longTTL  = time.Hour
)

// pastMargin is how far past a lease's end or a retry time advancePast
// moves the clock: more than any World's rounding of stored times.
const pastMargin = time.Second

// now is the time on the World's clock.
func (f *fixture) now() time.Time {
	if f.clock == nil {
		return time.Now()
	}
	return f.clock.Now()
}

// advancePast moves the World's clock past at; without a Subject.Clock
// the case is skipped.
func (f *fixture) advancePast(at time.Time) {
	f.t.Helper()
	if f.clock == nil {
		f.t.Skip("the World has no Subject.Clock to move past a lease or retry time")
	}
	f.clock.Advance(at.Add(pastMargin).Sub(f.clock.Now()))
}

// ev builds an event input.
func ev(corr string, d world.EventData) world.EventInput {
	return world.EventInput{CorrelationID: corr, Data: d}
}

func (f *fixture) append(runID string, evs ...world.EventInput) (*world.AppendResult, error) {
	return f.w.Append(f.ctx, &world.AppendParams{RunID: runID, Events: evs})
}

// mustAppend appends and checks the result's shape: one result per event,
// events densely numbered after the run's previous LastSeq.
func (f *fixture) mustAppend(runID string, evs ...world.EventInput) *world.AppendResult {
	f.t.Helper()
	res, err := f.append(runID, evs...)
	if err != nil {
		f.t.Fatalf("Append(%s, %s): %v", runID, describe(evs), err)
	}
	if res == nil || res.Run == nil {
		f.t.Fatalf("Append(%s, %s): result without Run", runID, describe(evs))
	}
	if len(res.Results) != len(evs) {
		f.t.Fatalf("Append(%s, %s): %d results for %d events", runID, describe(evs), len(res.Results), len(evs))
	}
	for i, r := range res.Results {
		if r.Event == nil {
			continue
		}
		e := r.Event
		if e.RunID != runID {
			f.t.Errorf("Append: result %d event RunID = %q, want %q", i, e.RunID, runID)
		}
		if err := world.ValidateID(world.PrefixEvent, e.EventID); err != nil {
			f.t.Errorf("Append: result %d event ID: %v", i, err)
		}
		if e.CreatedAt.IsZero() {
			f.t.Errorf("Append: result %d event %s has zero CreatedAt", i, e.Type())
		}
		if e.CorrelationID != evs[i].CorrelationID {
			f.t.Errorf("Append: result %d event CorrelationID = %q, want %q", i, e.CorrelationID, evs[i].CorrelationID)
		}
	}
	return res
}

// mustAppendOne appends one event and returns its result.
func (f *fixture) mustAppendOne(runID string, in world.EventInput) world.EventResult {
	f.t.Helper()
	return f.mustAppend(runID, in).Results[0]
}

func describe(evs []world.EventInput) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range evs {
		if i > 0 {
			b.WriteString(", ")
		}
		if e.Data == nil {
			b.WriteString("<nil>")
		} else {
			b.WriteString(string(e.Type()))
		}
		if e.CorrelationID != "" {
			b.WriteString("(" + e.CorrelationID + ")")
		}
	}
	b.WriteByte(']')
	return b.String()
}

// wantErr fails unless err matches target with errors.Is.
func wantErr(t *testing.T, err, target error, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if err == nil {
		t.Fatalf("%s: got no error, want %v (status %d)", what, target, world.Status(target))
	}
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %q (status %d), want errors.Is(err, %v) (status %d)", what, err, world.Status(err), target, world.Status(target))
	}
}

// wantAs fails unless err is (or wraps) an E, and returns it.
func wantAs[E error](t *testing.T, err error, format string, args ...any) E {
	t.Helper()
	var e E
	what := fmt.Sprintf(format, args...)
	if err == nil {
		t.Fatalf("%s: got no error, want a %T", what, e)
	}
	if !errors.As(err, &e) {
		t.Fatalf("%s: got error %q (%T), want a %T", what, err, err, e)
	}
	return e
}

// ---- runs ----

const testWorkflow = "worldtest-workflow"

// createRun creates a pending run of workflow wf (testWorkflow when empty).
func (f *fixture) createRun(wf string) string {
	f.t.Helper()
	if wf == "" {
		wf = testWorkflow
	}
	id := ids.New(world.PrefixRun)
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: wf, Input: json.RawMessage(`{"n":1}`)}))
	return id
}

// startedRun creates a run and starts it.
func (f *fixture) startedRun() string {
	f.t.Helper()
	id := f.createRun("")
	f.mustAppend(id, ev("", &world.RunStarted{}))
	return id
}

var terminalRunEvents = []world.EventType{world.EventRunCompleted, world.EventRunFailed, world.EventRunCancelled}

// terminalData returns a valid payload for a terminal run event.
func terminalData(t world.EventType) world.EventData {
	switch t {
	case world.EventRunCompleted:
		return &world.RunCompleted{Output: json.RawMessage(`"done"`)}
	case world.EventRunFailed:
		return &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, ErrorCode: world.CodeUserError}
	case world.EventRunCancelled:
		return &world.RunCancelled{Reason: "worldtest"}
	}
	panic("worldtest: not a terminal run event: " + string(t))
}

func terminalStatus(t world.EventType) world.RunStatus {
	switch t {
	case world.EventRunCompleted:
		return world.RunStatusCompleted
	case world.EventRunFailed:
		return world.RunStatusFailed
	}
	return world.RunStatusCancelled
}

// endRun ends a run with a terminal event of type how.
func (f *fixture) endRun(runID string, how world.EventType) {
	f.t.Helper()
	f.mustAppend(runID, ev("", terminalData(how)))
}

func (f *fixture) getRun(runID string) *world.Run {
	f.t.Helper()
	r, err := f.w.GetRun(f.ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		f.t.Fatalf("GetRun(%s): %v", runID, err)
	}
	if r == nil || r.RunID != runID {
		f.t.Fatalf("GetRun(%s): got %+v", runID, r)
	}
	return r
}

// ---- steps ----

func (f *fixture) createStep(runID string) string {
	f.t.Helper()
	id := ids.New(world.PrefixStep)
	f.mustAppend(runID, ev(id, &world.StepCreated{StepName: "worldtest-step", Input: json.RawMessage(`[1,2]`)}))
	return id
}

// startStep starts a step with the given lease and returns the step as the
// event left it.
func (f *fixture) startStep(runID, stepID string, lease time.Duration) *world.Step {
	f.t.Helper()
	r := f.mustAppendOne(runID, ev(stepID, &world.StepStarted{LeaseTTL: lease}))
	if r.Step == nil {
		f.t.Fatalf("step_started(%s): result without Step", stepID)
	}
	return r.Step
}

func (f *fixture) getStep(runID, stepID string) *world.Step {
	f.t.Helper()
	s, err := f.w.GetStep(f.ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil {
		f.t.Fatalf("GetStep(%s, %s): %v", runID, stepID, err)
	}
	if s == nil || s.StepID != stepID || s.RunID != runID {
		f.t.Fatalf("GetStep(%s, %s): got %+v", runID, stepID, s)
	}
	return s
}

func stepError(msg string) *world.ErrorData { return &world.ErrorData{Message: msg} }

// ---- hooks and waits ----

// createHook appends hook_created for a fresh hook ID and returns the ID and
// the result (a hook_conflict event when the token is taken).
func (f *fixture) createHook(runID, token string) (string, world.EventResult) {
	f.t.Helper()
	id := ids.New(world.PrefixHook)
	return id, f.mustAppendOne(runID, ev(id, &world.HookCreated{Token: token}))
}

// mustCreateHook creates a hook that must become active.
func (f *fixture) mustCreateHook(runID, token string) string {
	f.t.Helper()
	id, r := f.createHook(runID, token)
	if r.Event == nil || r.Event.Type() != world.EventHookCreated || r.Hook == nil {
		f.t.Fatalf("hook_created(%s, token %q) on a free token: got event %v, hook %v", id, token, eventType(r.Event), r.Hook)
	}
	return id
}

func (f *fixture) createWait(runID string, resumeAt time.Time) string {
	f.t.Helper()
	id := ids.New(world.PrefixWait)
	f.mustAppend(runID, ev(id, &world.WaitCreated{ResumeAt: resumeAt}))
	return id
}

func eventType(e *world.Event) string {
	if e == nil {
		return "<no event>"
	}
	return string(e.Type())
}

// token returns a unique hook token.
func token() string { return "tok-" + ids.New("") }

// ---- events ----

// events lists a run's whole log, page by page, checking the paging contract
// on the way.
func (f *fixture) events(runID string) []world.Event {
	f.t.Helper()
	var all []world.Event
	cursor := ""
	for i := 0; ; i++ {
		if i > 10000 {
			f.t.Fatalf("ListEvents(%s): more than 10000 pages", runID)
		}
		p, err := f.w.ListEvents(f.ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100, Cursor: cursor}})
		if err != nil {
			f.t.Fatalf("ListEvents(%s): %v", runID, err)
		}
		all = append(all, p.Items...)
		if len(p.Items) == 0 || !p.HasMore {
			break
		}
		if p.Cursor == "" {
			f.t.Fatalf("ListEvents(%s): a non-empty page with HasMore has no cursor", runID)
		}
		cursor = p.Cursor
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			f.t.Fatalf("ListEvents(%s): event %d (%s) has Seq %d, want %d (dense, 1-based)", runID, i, e.Type(), e.Seq, i+1)
		}
	}
	return all
}

// count counts the events of type typ (for correlation corr, any when empty).
func count(evs []world.Event, typ world.EventType, corr string) int {
	n := 0
	for _, e := range evs {
		if e.Type() == typ && (corr == "" || e.CorrelationID == corr) {
			n++
		}
	}
	return n
}

// wantLogUnchanged fails if the run's log differs from before.
func (f *fixture) wantLogUnchanged(runID string, before []world.Event, what string) {
	f.t.Helper()
	after := f.events(runID)
	if len(after) != len(before) {
		last := "none"
		if len(after) > 0 {
			last = string(after[len(after)-1].Type())
		}
		f.t.Fatalf("%s: the log changed from %d to %d events (last: %s)", what, len(before), len(after), last)
	}
	if r := f.getRun(runID); r.LastSeq != int64(len(before)) {
		f.t.Fatalf("%s: run LastSeq = %d, want %d", what, r.LastSeq, len(before))
	}
}

// ---- values ----

// jsonEqual compares two JSON documents semantically; empty equals empty.
func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// sameTime compares times to the millisecond (backends may store less).
func sameTime(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

// skew is the tolerance on timestamps the World computes from its own clock.
const skew = time.Second

// ---- concurrency ----

// race runs fn(i) in n goroutines released together and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one of errs is nil and that every other one
// satisfies loser; it returns the winner's index.
func oneWinner(t *testing.T, what string, errs []error, loser func(error) bool) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: goroutines %d and %d both succeeded; want exactly one winner", what, winner, i)
		case err == nil:
			winner = i
		case !loser(err):
			t.Fatalf("%s: goroutine %d lost with an unexpected error: %v", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no goroutine succeeded (first error: %v)", what, errs[0])
	}
	return winner
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// wantRefusal fails unless err is a *world.RefusalError of kind, and
// returns it.
func wantRefusal(t *testing.T, err, kind error, format string, args ...any) *world.RefusalError {
	t.Helper()
	e := wantAs[*world.RefusalError](t, err, format, args...)
	if e.Kind != kind {
		t.Fatalf("%s: got a refusal of %v (%v), want one of %v", fmt.Sprintf(format, args...), e.Kind, err, kind)
	}
	return e
}

// wantStepLeased fails unless err is the refusal of a step's (or a
// compensation's) attempt while another runs under a live lease: a
// *world.RefusalError of ErrConflict naming the attempt and the lease's end.
func wantStepLeased(t *testing.T, err error, format string, args ...any) *world.RefusalError {
	t.Helper()
	e := wantRefusal(t, err, world.ErrConflict, format, args...)
	if e.Attempt < 1 || e.Until.IsZero() {
		t.Fatalf("%s: refusal %+v, want the leased attempt and the lease's end", fmt.Sprintf(format, args...), e)
	}
	return e
}

// isRefusal returns a loser test for oneWinner: a *world.RefusalError of
// kind for which ok holds (any, when ok is nil).
func isRefusal(kind error, ok func(*world.RefusalError) bool) func(error) bool {
	return func(err error) bool {
		var e *world.RefusalError
		return errors.As(err, &e) && e.Kind == kind && (ok == nil || ok(e))
	}
}
