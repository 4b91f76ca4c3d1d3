package world_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

var allEventTypes = []world.EventType{
	world.EventRunCreated, world.EventRunStarted, world.EventRunCompleted, world.EventRunFailed, world.EventRunCancelled,
	world.EventRunHeld, world.EventStepCreated, world.EventStepStarted, world.EventStepCompleted, world.EventStepFailed, world.EventStepRetrying,
	world.EventHookCreated, world.EventHookConflict, world.EventHookReceived, world.EventHookDisposed,
	world.EventWaitCreated, world.EventWaitCompleted, world.EventAttributeSet,
}

// fullPayloads has one payload per event type with every field set.
func fullPayloads() []world.EventData {
	errData := &world.ErrorData{Type: "FatalError", Message: "m", Stack: "s", Fatal: true, Code: "C", Details: json.RawMessage(`{"d":1}`), Cause: &world.ErrorData{Message: "cause"}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	return []world.EventData{
		&world.RunCreated{WorkflowName: "wf", DeploymentID: "dep", Input: json.RawMessage(`{"a":1}`), ExecutionContext: json.RawMessage(`[1]`), Attributes: map[string]string{"k": "v"}, IdempotencyKey: "key", Secret: []byte{1, 2, 3}, Version: "v1.2.3+abc"},
		&world.RunStarted{},
		&world.RunCompleted{Output: json.RawMessage(`"out"`)},
		&world.RunFailed{Error: errData, ErrorCode: world.CodeUserError},
		&world.RunCancelled{Reason: "why"},
		&world.RunHeld{Error: errData, ErrorCode: world.CodeReplayDivergence, Attempt: 2, RetryAt: at},
		&world.StepCreated{StepName: "s", Input: json.RawMessage(`null`), InputDigest: "74234e98afe7498f"},
		&world.StepStarted{StepName: "s", Attempt: 3, LeaseTTL: 90 * time.Second, LeaseExpiresAt: at},
		&world.StepCompleted{StepName: "s", Result: json.RawMessage(`12.5`)},
		&world.StepFailed{StepName: "s", Error: errData},
		&world.StepRetrying{StepName: "s", Error: errData, RetryAfter: at},
		&world.HookCreated{Token: "tok", Metadata: json.RawMessage(`{"m":true}`), IsWebhook: true},
		&world.HookConflict{Token: "tok", ConflictingRunID: otherID},
		&world.HookReceived{Token: "tok", Payload: json.RawMessage(`{"p":[1,2]}`)},
		&world.HookDisposed{Token: "tok"},
		&world.WaitCreated{ResumeAt: at},
		&world.WaitCompleted{ResumeAt: at},
		&world.AttributeSet{Attributes: map[string]string{"k": "v", "tenant.id": "t-1"}, Patches: []string{"p1"}},
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	payloads := fullPayloads()
	seen := map[world.EventType]bool{}
	for i, d := range payloads {
		seen[typeOf(d)] = true
		in := world.Event{RunID: runID, EventID: eventID, Seq: int64(i + 1), CorrelationID: stepID, CreatedAt: now, Data: d}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%s: Marshal: %v", typeOf(d), err)
		}
		var wire map[string]any
		if err := json.Unmarshal(b, &wire); err != nil || wire["eventType"] != string(typeOf(d)) {
			t.Fatalf("%s: wire form %s lacks its eventType", typeOf(d), b)
		}
		var out world.Event
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: Unmarshal: %v", typeOf(d), err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("%s: round trip\n got %#v\nwant %#v", typeOf(d), out, in)
		}
		if out.Type() != typeOf(d) {
			t.Fatalf("%s: Type() after a round trip = %s", typeOf(d), out.Type())
		}
		// A pointer marshals the same.
		if b2, err := json.Marshal(&in); err != nil || string(b2) != string(b) {
			t.Fatalf("%s: *Event marshals differently: %s", typeOf(d), b2)
		}
	}
	for _, typ := range allEventTypes {
		if !seen[typ] {
			t.Errorf("no round-trip case for %s", typ)
		}
		d, err := world.NewEventData(typ)
		if err != nil || typeOf(d) != typ {
			t.Errorf("NewEventData(%s) = %T, %v", typ, d, err)
		}
	}
}

func TestEventJSONEmptyPayload(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"runId":"` + runID + `","seq":2,"eventType":"run_started"}`,
		`{"runId":"` + runID + `","seq":2,"eventType":"run_started","eventData":null}`,
	} {
		var e world.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatalf("Unmarshal(%s): %v", raw, err)
		}
		if _, ok := e.Data.(*world.RunStarted); !ok || e.Seq != 2 || e.RunID != runID {
			t.Fatalf("Unmarshal(%s) = %+v", raw, e)
		}
	}
}

func TestEventJSONInvalid(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"eventType":"run_exploded","eventData":{}}`,
		`{"eventType":"","eventData":{}}`,
		`{"eventType":"step_created","eventData":5}`,
		`{"eventType":"step_created","eventData":{"stepName":7}}`,
		`{"eventType":"wait_created","eventData":{"resumeAt":"yesterday"}}`,
		`[]`,
	} {
		var e world.Event
		if err := json.Unmarshal([]byte(raw), &e); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("Unmarshal(%s): %v, want ErrInvalid", raw, err)
		}
	}
	// json.Unmarshal rejects malformed JSON itself; a caller of the method
	// (a World decoding its store) gets ErrInvalid.
	var e world.Event
	if err := e.UnmarshalJSON([]byte(`{"eventType":`)); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("UnmarshalJSON of malformed JSON: %v, want ErrInvalid", err)
	}
	if _, err := world.NewEventData("nope"); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("NewEventData(nope): %v, want ErrInvalid", err)
	}
	if _, err := json.Marshal(world.Event{RunID: runID}); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("Marshal of an event without data: %v, want ErrInvalid", err)
	}
}

func TestValidateEvent(t *testing.T) {
	t.Parallel()
	ok := []world.Event{}
	for _, d := range fullPayloads() {
		corr := ""
		switch {
		case strings.HasPrefix(string(typeOf(d)), "step_"):
			corr = stepID
		case strings.HasPrefix(string(typeOf(d)), "hook_"):
			corr = hookID
		case strings.HasPrefix(string(typeOf(d)), "wait_"):
			corr = waitID
		}
		ok = append(ok, world.Event{CorrelationID: corr, Data: d})
	}
	for _, e := range ok {
		if err := world.ValidateEvent(e); err != nil {
			t.Errorf("ValidateEvent(%s): %v", e.Type(), err)
		}
	}
	bad := []struct {
		name string
		ev   world.Event
	}{
		{"no data", world.Event{}},
		{"typed nil data", world.Event{CorrelationID: stepID, Data: (*world.StepCreated)(nil)}},
		{"typed nil run data", world.Event{Data: (*world.RunFailed)(nil)}},
		{"run_created without workflowName", world.Event{Data: &world.RunCreated{}}},
		{"run_created with invalid input", world.Event{Data: &world.RunCreated{WorkflowName: "w", Input: json.RawMessage(`{`)}}},
		{"run_created with invalid execution context", world.Event{Data: &world.RunCreated{WorkflowName: "w", ExecutionContext: json.RawMessage(`x`)}}},
		{"run_created with a correlation ID", world.Event{CorrelationID: stepID, Data: &world.RunCreated{WorkflowName: "w"}}},
		{"run_started with a correlation ID", world.Event{CorrelationID: stepID, Data: &world.RunStarted{}}},
		{"run_completed with invalid output", world.Event{Data: &world.RunCompleted{Output: json.RawMessage(`}`)}}},
		{"run_completed with a correlation ID", world.Event{CorrelationID: waitID, Data: &world.RunCompleted{}}},
		{"run_failed without error", world.Event{Data: &world.RunFailed{}}},
		{"run_failed with a correlation ID", world.Event{CorrelationID: hookID, Data: &world.RunFailed{Error: &world.ErrorData{}}}},
		{"run_cancelled with a correlation ID", world.Event{CorrelationID: hookID, Data: &world.RunCancelled{}}},
		{"step_created without correlation", world.Event{Data: &world.StepCreated{StepName: "s"}}},
		{"step_created with a long name", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: strings.Repeat("s", world.MaxNameLength+1)}}},
		{"step_created with a hook ID", world.Event{CorrelationID: hookID, Data: &world.StepCreated{StepName: "s"}}},
		{"step_created with a malformed ID", world.Event{CorrelationID: "step_123", Data: &world.StepCreated{StepName: "s"}}},
		{"step_created without stepName", world.Event{CorrelationID: stepID, Data: &world.StepCreated{}}},
		{"step_created with invalid input", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`{'a':1}`)}}},
		{"run_held without an error", world.Event{Data: &world.RunHeld{ErrorCode: world.CodeReplayDivergence}}},
		{"run_held without a code", world.Event{Data: &world.RunHeld{Error: &world.ErrorData{Message: "m"}}}},
		{"run_held with a negative attempt", world.Event{Data: &world.RunHeld{Error: &world.ErrorData{Message: "m"}, ErrorCode: "C", Attempt: -1}}},
		{"run_held with a correlation ID", world.Event{CorrelationID: stepID, Data: &world.RunHeld{Error: &world.ErrorData{Message: "m"}, ErrorCode: "C"}}},
		{"step_created with an upper-case digest", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s", InputDigest: "ABCDEF"}}},
		{"step_created with a non-hex digest", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s", InputDigest: "12345g"}}},
		{"step_created with a long digest", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s", InputDigest: strings.Repeat("a", 65)}}},
		{"step_started with a wait ID", world.Event{CorrelationID: waitID, Data: &world.StepStarted{}}},
		{"step_started with a negative lease", world.Event{CorrelationID: stepID, Data: &world.StepStarted{LeaseTTL: -time.Second}}},
		{"step_completed with invalid result", world.Event{CorrelationID: stepID, Data: &world.StepCompleted{Result: json.RawMessage(`tru`)}}},
		{"step_completed without correlation", world.Event{Data: &world.StepCompleted{}}},
		{"step_failed without error", world.Event{CorrelationID: stepID, Data: &world.StepFailed{}}},
		{"step_failed with a run ID", world.Event{CorrelationID: runID, Data: &world.StepFailed{Error: &world.ErrorData{}}}},
		{"step_retrying without error", world.Event{CorrelationID: stepID, Data: &world.StepRetrying{}}},
		{"step_retrying with a hook ID", world.Event{CorrelationID: hookID, Data: &world.StepRetrying{Error: &world.ErrorData{}}}},
		{"hook_created without token", world.Event{CorrelationID: hookID, Data: &world.HookCreated{}}},
		{"hook_created with a long token", world.Event{CorrelationID: hookID, Data: &world.HookCreated{Token: strings.Repeat("x", world.MaxTokenLength+1)}}},
		{"run_created with a workflow name that is not UTF-8", world.Event{Data: &world.RunCreated{WorkflowName: "order\xff"}}},
		{"run_created with an idempotency key that is not UTF-8", world.Event{Data: &world.RunCreated{WorkflowName: "w", IdempotencyKey: "k\xc3"}}},
		{"step_created with a name that is not UTF-8", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "\xfe\xff"}}},
		{"hook_created with a token that is not UTF-8", world.Event{CorrelationID: hookID, Data: &world.HookCreated{Token: "approve/\x80"}}},
		{"run_created with a newline in the workflow name", world.Event{Data: &world.RunCreated{WorkflowName: "new\nline"}}},
		{"run_created with a tab in the workflow name", world.Event{Data: &world.RunCreated{WorkflowName: "tab\there"}}},
		{"run_created with an escape in the workflow name", world.Event{Data: &world.RunCreated{WorkflowName: "esc\x1b[31mred"}}},
		{"run_created with DEL in the idempotency key", world.Event{Data: &world.RunCreated{WorkflowName: "w", IdempotencyKey: "k\x7f"}}},
		{"run_created with a C1 control in the idempotency key", world.Event{Data: &world.RunCreated{WorkflowName: "w", IdempotencyKey: "k\u009b31m"}}},
		{"step_created with a carriage return in the name", world.Event{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s\r"}}},
		{"hook_created with an escape in the token", world.Event{CorrelationID: hookID, Data: &world.HookCreated{Token: "t\x1b]0;x\x07"}}},
		{"run_created with a long workflow name", world.Event{Data: &world.RunCreated{WorkflowName: strings.Repeat("w", world.MaxNameLength+1)}}},
		{"run_created with a long version", world.Event{Data: &world.RunCreated{WorkflowName: "w", Version: strings.Repeat("v", world.MaxVersionLength+1)}}},
		{"run_created with a newline in the version", world.Event{Data: &world.RunCreated{WorkflowName: "w", Version: "v1\n"}}},
		{"run_created with a version that is not UTF-8", world.Event{Data: &world.RunCreated{WorkflowName: "w", Version: "v\xff"}}},
		{"run_created with a version padded with spaces", world.Event{Data: &world.RunCreated{WorkflowName: "w", Version: " v1"}}},
		{"run_created with a long idempotency key", world.Event{Data: &world.RunCreated{WorkflowName: "w", IdempotencyKey: strings.Repeat("k", world.MaxIdempotencyKeyLength+1)}}},
		{"hook_created with invalid metadata", world.Event{CorrelationID: hookID, Data: &world.HookCreated{Token: "t", Metadata: json.RawMessage(`[`)}}},
		{"hook_created with a step ID", world.Event{CorrelationID: stepID, Data: &world.HookCreated{Token: "t"}}},
		{"hook_conflict without token", world.Event{CorrelationID: hookID, Data: &world.HookConflict{}}},
		{"hook_conflict with a wait ID", world.Event{CorrelationID: waitID, Data: &world.HookConflict{Token: "t"}}},
		{"hook_received with invalid payload", world.Event{CorrelationID: hookID, Data: &world.HookReceived{Payload: json.RawMessage(`nul`)}}},
		{"hook_received without correlation", world.Event{Data: &world.HookReceived{}}},
		{"hook_disposed with a step ID", world.Event{CorrelationID: stepID, Data: &world.HookDisposed{}}},
		{"wait_created without resumeAt", world.Event{CorrelationID: waitID, Data: &world.WaitCreated{}}},
		{"wait_created with a step ID", world.Event{CorrelationID: stepID, Data: &world.WaitCreated{ResumeAt: now}}},
		{"wait_completed without correlation", world.Event{Data: &world.WaitCompleted{}}},
	}
	for _, tc := range bad {
		err := world.ValidateEvent(tc.ev)
		if !errors.Is(err, world.ErrInvalid) {
			t.Errorf("ValidateEvent(%s): %v, want ErrInvalid", tc.name, err)
		}
		if world.Status(err) != 400 {
			t.Errorf("ValidateEvent(%s): status %d, want 400", tc.name, world.Status(err))
		}
	}
	// The longest token is fine.
	if err := world.ValidateEvent(world.Event{CorrelationID: hookID, Data: &world.HookCreated{Token: strings.Repeat("x", world.MaxTokenLength)}}); err != nil {
		t.Errorf("ValidateEvent with a token of MaxTokenLength: %v", err)
	}
}

func TestEventTypeAndStatus(t *testing.T) {
	t.Parallel()
	for _, typ := range allEventTypes {
		want := typ == world.EventRunCompleted || typ == world.EventRunFailed || typ == world.EventRunCancelled
		if typ.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", typ, typ.Terminal())
		}
	}
	if (world.Event{}).Type() != "" {
		t.Error("Type of an event without data is not empty")
	}
	for _, tc := range []struct {
		s               world.RunStatus
		terminal, valid bool
	}{
		{world.RunStatusPending, false, true}, {world.RunStatusRunning, false, true}, {world.RunStatusHeld, false, true},
		{world.RunStatusCompleted, true, true}, {world.RunStatusFailed, true, true}, {world.RunStatusCancelled, true, true},
		{"paused", false, false}, {"", false, false},
	} {
		if tc.s.Terminal() != tc.terminal || tc.s.Valid() != tc.valid {
			t.Errorf("RunStatus %q: Terminal %v Valid %v", tc.s, tc.s.Terminal(), tc.s.Valid())
		}
	}
	for s, want := range map[world.StepStatus]bool{world.StepStatusPending: false, world.StepStatusRunning: false, world.StepStatusCompleted: true, world.StepStatusFailed: true} {
		if s.Terminal() != want {
			t.Errorf("StepStatus %q Terminal %v", s, s.Terminal())
		}
	}
}

func TestCheckVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    string
		want string // a fragment of the error; empty: valid
	}{
		{"", ""},
		{"v1", ""},
		{"3f2a9c1d0b7e+dirty", ""},
		{"release 2026-11-24", ""},
		{strings.Repeat("v", world.MaxVersionLength), ""},
		{strings.Repeat("v", world.MaxVersionLength+1), "longer than"},
		{"v1\n", "control character"},
		{"v\x1b[31m", "control character"},
		{"v\xff", "UTF-8"},
		{"v1 ", "space"},
	}
	for _, c := range cases {
		err := world.CheckVersion(c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckVersion(%q) = %v, want nil", c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckVersion(%q) = %v, want an error saying %q", c.v, err, c.want)
		}
	}
}
