package engine

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestKeysGolden pins every idempotency key format: keys are persisted (a
// World deduplicates messages by them), so the same inputs must give the
// same strings in every release. Every format must also be distinct from
// every other for the same inputs.
func TestKeysGolden(t *testing.T) {
	t.Parallel()
	const run, step = "wrun_01J", "step_01K"
	at := time.UnixMilli(1_700_000_000_123)
	msg := world.Message{RunID: run, StepID: step, StepIDs: []string{"a", "b"}, NotBefore: at}
	tests := []struct {
		name, got, want string
	}{
		{"start", StartKey(run), "start:wrun_01J"},
		{"cancel", CancelKey(run), "cancel:wrun_01J"},
		{"fail", keyFail(run), "fail:wrun_01J"},
		{"misuse", keyMisuse(run), "misuse:wrun_01J"},
		{"hook", keyHook("evnt_01"), "hook:evnt_01"},
		{"after", keyAfter(run, 42), "after:wrun_01J:42"},
		{"unreleased", keyUnreleased(run, 42), "unreleased:wrun_01J:42"},
		{"cover", keyCover(run, at), "cover:wrun_01J:1700000000123"},
		{"budget", keyBudget(run, 42), "budget:wrun_01J:42"},
		{"busy", keyBusy(run, 2, 3, 17000000), "busy:wrun_01J:2:3:17000000"},
		{"hop", keyHop(msg, 4), "hop:wrun_01J:step_01K:2:1700000000123000000:4"},
		{"timer", keyTimer(run, at, false), "timer:wrun_01J:1700000000123"},
		{"timer early", keyTimer(run, at, true), "timer:wrun_01J:1700000000123:early"},
		{"lease", keyLeaseCheck(run, at.Truncate(time.Second)), "lease:wrun_01J:1700000000"},
		{"held", keyHeld(run, 3), "held:wrun_01J:3"},
		{"retry held", keyRetryHeld(run, 3), "retry:wrun_01J:3"},
		{"step", keyStep(step, 2), "step:step_01K:a2"},
		{"steps", keySteps(step, 2, 16), "steps:step_01K:a2:n16"},
		{"step early", keyStepEarly(step, at), "step:step_01K:early:1700000000123"},
		{"step leased", keyStepLeased(step, 2, at), "step:step_01K:leased:a2:1700000000123"},
		{"done", keyDone(step, 2), "done:step_01K:2"},
		{"done group", keyDoneGroup(step, 2, 16), "done:step_01K:2:n16"},
		{"unregistered", keyUnregistered(step, 2), "unregistered:step_01K:2"},
		{"comp", keyComp(run, step, at), "comp:wrun_01J:step_01K:1700000000123"},
		{"comp next", keyComp(run, "", at), "comp:wrun_01J::1700000000123"},
		{"replace", keyResend("replace", msg), "replace:wrun_01J:5f823bce53a242ccd951add9090cd6ae"},
		{"recount", keyResend("recount", msg), "recount:wrun_01J:5f823bce53a242ccd951add9090cd6ae"},
		{"refused", keyRefused([]byte(`{"runId":"wrun_01J","refused":1}`)), "refused:3c9ba257a26b58e481fe41a2ec25034b"},
	}
	seen := make(map[string]string, len(tests))
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: key %q, want %q (a key's format must never change)", tt.name, tt.got, tt.want)
		}
		if other, dup := seen[tt.got]; dup {
			t.Errorf("%s and %s share the key %q", tt.name, other, tt.got)
		}
		seen[tt.got] = tt.name
	}
}
