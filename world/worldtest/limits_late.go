package worldtest

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// testLimitRunBytesLate: once a run has ended, the outcome of a step it
// left running still counts against MaxRunBytes when it carries more than
// world.LateOutcomeSlack. At the bound, a result (or an error) larger than
// the slack is refused with a *world.LimitError of "run bytes", leaving
// the run as it was; the step's failure within the slack (what the engine
// records in its place) and a result within it are accepted past the
// bound, and the run comes to rest within MaxRunBytes, its end's error and
// the slack per step.
func testLimitRunBytesLate(t *testing.T, f *fixture) {
	l := f.limits()
	id := f.startedRun()
	steps := make([]string, 3)
	for i := range steps {
		steps[i] = ids.New(world.PrefixStep)
		f.mustAppend(id, ev(steps[i], &world.StepCreated{StepName: "late"}), ev(steps[i], &world.StepStarted{LeaseTTL: time.Minute}))
	}
	hook := ids.New(world.PrefixHook)
	f.mustAppend(id, ev(hook, &world.HookCreated{Token: "tok-" + hook}))
	half := l.MaxPayload / 2 // within MaxPayload, even sealed
	for i := int64(0); ; i++ {
		if i > 2*l.MaxRunBytes/int64(half)+2 {
			t.Fatalf("%d deliveries of %d bytes accepted, past MaxRunBytes %d: none refused", i, half, l.MaxRunBytes)
		}
		if _, err := f.append(id, ev(hook, &world.HookReceived{Payload: jsonOfSize(half)})); err != nil {
			wantLimit(t, err, "run bytes", "a delivery past MaxRunBytes")
			break
		}
	}
	endErr := &world.ErrorData{Type: "LimitExceededError", Message: "full", Code: world.CodeLimitExceeded}
	f.mustAppend(id, ev("", &world.RunFailed{Error: endErr, ErrorCode: world.CodeLimitExceeded}))
	ended := f.getRun(id)

	small := &world.ErrorData{Type: "LimitExceededError", Message: "the result passes the run's bytes", Code: world.CodeLimitExceeded, Fatal: true}
	big := &world.ErrorData{Type: "StepError", Message: strings.Repeat("e", 3*half/2)} // more than the room a refused delivery left, sealed or not
	for _, late := range []world.EventInput{
		ev(steps[0], &world.StepCompleted{StepName: "late", Result: jsonOfSize(half)}),
		ev(steps[2], &world.StepFailed{StepName: "late", Error: big}),
	} {
		before := f.getRun(id)
		_, err := f.append(id, late)
		le := wantLimit(t, err, "run bytes", describe([]world.EventInput{late})+" of more than LateOutcomeSlack after the run's end, past MaxRunBytes")
		if le.Max != l.MaxRunBytes || le.Size <= le.Max || le.RunID != id {
			t.Fatalf("LimitError %+v, want run %s, Max %d and Size above it", le, id, l.MaxRunBytes)
		}
		f.wantUnchanged(id, before, describe([]world.EventInput{late})+" refused")
		if after := f.getRun(id); after.PayloadBytes != before.PayloadBytes {
			t.Fatalf("the refused outcome changed the run's payload bytes from %d to %d", before.PayloadBytes, after.PayloadBytes)
		}
	}
	f.mustAppend(id, ev(steps[0], &world.StepFailed{StepName: "late", Error: small}))
	f.mustAppend(id, ev(steps[1], &world.StepCompleted{StepName: "late", Result: jsonOfSize(64)}))
	f.mustAppend(id, ev(steps[2], &world.StepFailed{StepName: "late", Error: small}))
	f.mustAppend(id, ev("", &world.RunDeactivated{}))
	rest := f.getRun(id)
	if bound := l.MaxRunBytes + ended.PayloadBytes - l.MaxRunBytes + int64(len(steps))*world.LateOutcomeSlack; rest.PayloadBytes > bound || ended.PayloadBytes > l.MaxRunBytes+int64(l.MaxPayload) {
		t.Fatalf("the run at rest stores %d payload bytes (%d at its end), want at most %d: its end and %d per step", rest.PayloadBytes, ended.PayloadBytes, bound, world.LateOutcomeSlack)
	}
}
