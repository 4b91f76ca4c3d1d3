package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// testRunBytesAsStored: Run.PayloadBytes counts each payload as stored
// (its JSON as encoding/json writes it, what a read returns), so it is a
// function of the committed events alone. Payloads appended spaced, with
// HTML characters and U+2028, an error with details, a hook_created
// recorded as hook_conflict (its metadata not recorded): the run counts
// the same in GetRun and ListRuns, before and after its log was read whole
// (a World may cache what it folds from it), as the log read back folds
// (world.FoldEvents) and as the test measures it. A World that seals
// payloads (Options.Sealed) counts them sealed: more.
func testRunBytesAsStored(t *testing.T, f *fixture) {
	holder := f.startedRun()
	held := token()
	f.mustCreateHook(holder, held)

	id := ids.New(world.PrefixRun)
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: json.RawMessage(`{ "a" : [ 1, 2 ] }`)}), ev("", &world.RunStarted{}))
	step := ids.New(world.PrefixStep)
	f.mustAppend(id, ev(step, &world.StepCreated{StepName: "s", Input: json.RawMessage("{\n  \"q\": \"<&>\"\n}")}), ev(step, &world.StepStarted{LeaseTTL: time.Minute}))
	f.mustAppend(id, ev(step, &world.StepCompleted{Result: json.RawMessage("\"\u2028 <b> \u2029\"")}))
	failed := ids.New(world.PrefixStep)
	f.mustAppend(id, ev(failed, &world.StepCreated{StepName: "s"}), ev(failed, &world.StepStarted{LeaseTTL: time.Minute}))
	f.mustAppend(id, ev(failed, &world.StepFailed{Error: &world.ErrorData{Message: "bad <&> step", Details: json.RawMessage(`{ "d" : "&" }`)}}))
	f.wantRunBytes(id, "after a step's failure")
	hook := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(hook, &world.HookCreated{Token: token(), Metadata: json.RawMessage(`{"m": "<&>"}`)}))
	f.mustAppend(id, ev(hook, &world.HookReceived{Payload: json.RawMessage(` [ "p" , "<" ] `)}))
	conflict := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(conflict, &world.HookCreated{Token: held, Metadata: json.RawMessage(`{ "lost" : "<>" }`)}))
	f.wantRunBytes(id, "after a hook_conflict")
	f.mustAppend(id, ev(hook, &world.HookReceived{Payload: json.RawMessage(`{ "again" : true }`)}))
	f.mustAppend(id, ev("", &world.RunCompleted{Output: json.RawMessage(` { "out" : "<ok>" } `)}))
	f.wantRunBytes(id, "after the run's end")
	f.mustAppend(id, ev("", &world.RunDeactivated{}))
	f.wantRunBytes(id, "at rest")
}

// wantRunBytes checks the run's PayloadBytes on every read path against
// the log read back, measured by the test.
func (f *fixture) wantRunBytes(id, what string) {
	f.t.Helper()
	got := f.getRun(id)
	evs := f.events(id) // read whole: a World may cache what it folds from it
	st, err := world.FoldEvents(evs)
	if err != nil {
		f.t.Fatalf("%s: FoldEvents: %v", what, err)
	}
	want := int64(0)
	for _, e := range evs {
		want += storedPayloadBytes(f.t, e)
	}
	if st.Run.PayloadBytes != want {
		f.t.Fatalf("%s: the log read back folds to %d payload bytes, want %d (each payload as stored)", what, st.Run.PayloadBytes, want)
	}
	again := f.getRun(id)
	listed := f.listed(id, got.Status)
	switch {
	case listed == nil:
		f.t.Fatalf("%s: ListRuns(status %s) does not list run %s", what, got.Status, id)
	case again.PayloadBytes != got.PayloadBytes || listed.PayloadBytes != got.PayloadBytes:
		f.t.Fatalf("%s: GetRun counts %d payload bytes, again after the log was read %d, ListRuns %d: want one count", what, got.PayloadBytes, again.PayloadBytes, listed.PayloadBytes)
	case !f.o.Sealed && got.PayloadBytes != want:
		f.t.Fatalf("%s: the run counts %d payload bytes, its log as stored %d", what, got.PayloadBytes, want)
	case f.o.Sealed && got.PayloadBytes <= want:
		f.t.Fatalf("%s: the run counts %d payload bytes, want them sealed: more than the %d of its log read back", what, got.PayloadBytes, want)
	}
}

// storedPayloadBytes measures e's payloads as a World stores them, from
// the event's JSON: each payload's encoding, each error's text and the
// encoding of its details.
func storedPayloadBytes(t *testing.T, e world.Event) int64 {
	t.Helper()
	b, err := json.Marshal(e.Data)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Data.(*world.HookConflict); ok {
		return 0
	}
	n := 0
	for _, k := range []string{"input", "executionContext", "output", "result", "metadata", "payload"} {
		n += len(fields[k])
	}
	if raw, ok := fields["error"]; ok && string(raw) != "null" {
		var ed world.ErrorData
		if err := json.Unmarshal(raw, &ed); err != nil {
			t.Fatal(err)
		}
		n += errorTextBytes(&ed)
	}
	return int64(n)
}

// errorTextBytes is an error's text and details, with its causes.
func errorTextBytes(e *world.ErrorData) int {
	if e == nil {
		return 0
	}
	n := len(e.Type) + len(e.Message) + len(e.Stack) + len(e.Code) + len(e.Details) + errorTextBytes(e.Cause)
	for _, m := range e.Errors {
		n += errorTextBytes(m)
	}
	return n
}
