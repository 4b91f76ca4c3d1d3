package worldtest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// Limits: a World reports the limits it enforces (a Limits() world.Limits
// method, read with world.LimitsOf) and world.Apply refuses, with a
// *world.LimitError, a payload larger than MaxPayload and any event but a
// run's end (or hold) once the run has MaxEvents, leaving the run as it
// was. The suite reaches the limits: New must configure small ones
// (MaxEvents 1,000 to 2,000, MaxPayload 64 KiB to 1 MiB: other cases
// append a few hundred events and payloads of 16 KiB).
func limitCases() []testCase {
	return []testCase{
		{"payload_refused_run_unchanged", testLimitPayload},
		{"events_refused_end_accepted", testLimitEvents},
	}
}

// maxSuiteEvents is the largest MaxEvents the suite appends up to.
const maxSuiteEvents = 2000

// limits returns the limits the World reports, failing the case when it
// reports none or ones too large for the suite to reach.
func (f *fixture) limits() world.Limits {
	f.t.Helper()
	lw, ok := f.w.(interface{ Limits() world.Limits })
	if !ok {
		f.t.Fatal("worldtest: the World does not report its limits (a Limits() world.Limits method)")
	}
	l := lw.Limits()
	if l.MaxEvents < 1000 || l.MaxEvents > maxSuiteEvents || l.MaxPayload < 64<<10 || l.MaxPayload > 1<<20 {
		f.t.Fatalf("worldtest: configure the World under test with small limits (MaxEvents 1000..%d, MaxPayload 64 KiB..1 MiB), not %+v", maxSuiteEvents, l)
	}
	return l
}

// wantLimit fails unless err is a *world.LimitError of limit, matching
// world.ErrLimitExceeded.
func wantLimit(t *testing.T, err error, limit, what string) *world.LimitError {
	t.Helper()
	wantErr(t, err, world.ErrLimitExceeded, "%s", what)
	var le *world.LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("%s: got %v, want a *world.LimitError of limit %q", what, err, limit)
	}
	if world.Status(err) != 413 {
		t.Fatalf("%s: Status = %d, want 413", what, world.Status(err))
	}
	return le
}

// jsonOfSize is a JSON string of exactly n bytes (n >= 2).
func jsonOfSize(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

func testLimitPayload(t *testing.T, f *fixture) {
	l := f.limits()
	_, err := f.append(ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: jsonOfSize(l.MaxPayload + 1)}))
	le := wantLimit(t, err, "payload", "run_created with an input of MaxPayload+1 bytes")
	// A World that seals payloads (encrypt) judges them sealed: larger.
	if le.Max != int64(l.MaxPayload) || le.Size <= le.Max {
		t.Fatalf("LimitError Max %d Size %d, want Max %d and Size above it", le.Max, le.Size, l.MaxPayload)
	}
	id := ids.New(world.PrefixRun)
	half := l.MaxPayload / 2 // accepted, even sealed
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: jsonOfSize(half)}))
	f.mustAppend(id, ev("", &world.RunStarted{}))
	hook := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(hook, &world.HookCreated{Token: "tok-" + hook}))
	step := f.createStep(id)
	f.startStep(id, step, 0)
	before := f.getRun(id)
	for _, in := range []world.EventInput{
		ev(hook, &world.HookReceived{Payload: jsonOfSize(l.MaxPayload + 1)}),
		ev(step, &world.StepCompleted{Result: jsonOfSize(l.MaxPayload + 1)}),
		ev(step, &world.StepFailed{Error: &world.ErrorData{Message: strings.Repeat("e", l.MaxPayload+1)}}),
		ev("", &world.RunCompleted{Output: jsonOfSize(l.MaxPayload + 1)}),
	} {
		_, err := f.append(id, in)
		wantLimit(t, err, "payload", describe([]world.EventInput{in})+" over MaxPayload")
		f.wantUnchanged(id, before, describe([]world.EventInput{in})+" refused")
	}
	f.mustAppend(id, ev(hook, &world.HookReceived{Payload: jsonOfSize(half)}))
}

func testLimitEvents(t *testing.T, f *fixture) {
	l := f.limits()
	id := f.startedRun() // two events
	var evs []world.EventInput
	for range l.MaxEvents - 2 {
		evs = append(evs, ev("", attrSet("k", "v")))
	}
	for len(evs) > 0 {
		n := min(len(evs), 25) // within every World's commit size
		f.mustAppend(id, evs[:n]...)
		evs = evs[n:]
	}
	before := f.getRun(id)
	if before.LastSeq != l.MaxEvents {
		t.Fatalf("LastSeq %d, want MaxEvents %d", before.LastSeq, l.MaxEvents)
	}
	hook := ids.New(world.PrefixHook)
	for _, in := range []world.EventInput{
		ev("", attrSet("k", "w")),
		ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s"}),
		ev(hook, &world.HookCreated{Token: "tok-" + hook}),
	} {
		_, err := f.append(id, in)
		le := wantLimit(t, err, "events", describe([]world.EventInput{in})+" on a run at MaxEvents")
		if le.Max != l.MaxEvents {
			t.Fatalf("LimitError Max %d, want %d", le.Max, l.MaxEvents)
		}
		f.wantUnchanged(id, before, describe([]world.EventInput{in})+" refused")
	}
	f.mustAppend(id, ev("", &world.RunFailed{Error: &world.ErrorData{Message: "too long"}, ErrorCode: world.CodeMaxEventsExceeded}))
	if r := f.getRun(id); r.Status != world.RunStatusFailed || r.ErrorCode != world.CodeMaxEventsExceeded {
		t.Fatalf("run after run_failed: status %s code %q", r.Status, r.ErrorCode)
	}
	_, err := f.append(id, ev("", attrSet("k", "w")))
	wantLimit(t, err, "events", "attribute_set on a finished run past MaxEvents")
	f.mustAppend(id, ev("", &world.RunDeactivated{}))
}
