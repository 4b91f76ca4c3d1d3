package worldtest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func runCases() []testCase {
	return []testCase{
		{"create", testRunCreate},
		{"create_duplicate_id", testRunCreateDuplicate},
		{"create_idempotency_key_taken", testRunCreateIdempotencyKey},
		{"create_invalid", testRunCreateInvalid},
		{"start_pending", testRunStartPending},
		{"start_running_is_noop", testRunStartRunning},
		{"start_finished_gone", testRunStartFinished},
		{"start_missing", testRunStartMissing},
		{"end", testRunEnd},
		{"end_finished_conflict", testRunEndFinished},
		{"cancel_repeated_appends_nothing", testRunCancelRepeated},
		{"cancel_finished_conflict", testRunCancelFinished},
		{"invalid_run_events", testRunEventsInvalid},
		{"unknown_run_not_found", testUnknownRun},
		{"version_kept", testRunVersion},
	}
}

func testRunCreate(t *testing.T, f *fixture) {
	id := ids.New(world.PrefixRun)
	before := time.Now()
	res := f.mustAppend(id, ev("", &world.RunCreated{
		WorkflowName:     "wf-create",
		DeploymentID:     "dep-1",
		Input:            json.RawMessage(`{"a":[1,2,3]}`),
		ExecutionContext: json.RawMessage(`{"trace":"x"}`),
		Attributes:       map[string]string{"k": "v"},
		IdempotencyKey:   "key-" + id,
		Secret:           []byte("0123456789abcdef0123456789abcdef"),
	}))
	e := res.Results[0].Event
	if e == nil || e.Type() != world.EventRunCreated || e.Seq != 1 {
		t.Fatalf("run_created: got event %+v, want run_created with Seq 1", e)
	}
	if res.Run.Status != world.RunStatusPending || res.Run.LastSeq != 1 {
		t.Fatalf("run_created: result run status %q LastSeq %d, want pending and 1", res.Run.Status, res.Run.LastSeq)
	}
	r := f.getRun(id)
	switch {
	case r.WorkflowName != "wf-create", r.DeploymentID != "dep-1", r.IdempotencyKey != "key-"+id:
		t.Fatalf("GetRun: got workflow %q deployment %q key %q", r.WorkflowName, r.DeploymentID, r.IdempotencyKey)
	case !jsonEqual(r.Input, []byte(`{"a":[1,2,3]}`)), !jsonEqual(r.ExecutionContext, []byte(`{"trace":"x"}`)):
		t.Fatalf("GetRun: input %s execution context %s not preserved", r.Input, r.ExecutionContext)
	case r.Attributes["k"] != "v":
		t.Fatalf("GetRun: attributes %v, want k=v", r.Attributes)
	case r.Status != world.RunStatusPending || r.LastSeq != 1:
		t.Fatalf("GetRun: status %q LastSeq %d, want pending and 1", r.Status, r.LastSeq)
	case r.CreatedAt.Before(before.Add(-skew)) || r.CreatedAt.After(time.Now().Add(skew)):
		t.Fatalf("GetRun: CreatedAt %v is not the time of creation (~%v)", r.CreatedAt, before)
	case !r.StartedAt.IsZero() || !r.CompletedAt.IsZero():
		t.Fatalf("GetRun: a pending run has StartedAt %v CompletedAt %v", r.StartedAt, r.CompletedAt)
	}
	evs := f.events(id)
	if len(evs) != 1 || evs[0].Type() != world.EventRunCreated {
		t.Fatalf("ListEvents: got %d events, want just run_created", len(evs))
	}
	d, ok := evs[0].Data.(*world.RunCreated)
	if !ok || d.WorkflowName != "wf-create" || !jsonEqual(d.Input, []byte(`{"a":[1,2,3]}`)) || string(d.Secret) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("ListEvents: run_created payload %+v not preserved", evs[0].Data)
	}
}

func testRunCreateDuplicate(t *testing.T, f *fixture) {
	id := f.createRun("first")
	_, err := f.append(id, ev("", &world.RunCreated{WorkflowName: "second"}))
	e := wantRefusal(t, err, world.ErrConflict, "run_created with an existing run ID")
	if e.Entity != id || e.EventType != world.EventRunCreated || e.Key != "" {
		t.Fatalf("refusal = %+v, want run_created of %q", e, id)
	}
	if world.Status(err) != 409 {
		t.Fatalf("duplicate run_created: status %d, want 409", world.Status(err))
	}
	if r := f.getRun(id); r.WorkflowName != "first" || r.LastSeq != 1 {
		t.Fatalf("duplicate run_created changed the run: workflow %q LastSeq %d", r.WorkflowName, r.LastSeq)
	}
	if n := len(f.events(id)); n != 1 {
		t.Fatalf("duplicate run_created: log has %d events, want 1", n)
	}
}

func testRunCreateIdempotencyKey(t *testing.T, f *fixture) {
	key := "idem-" + ids.New("")
	first := ids.New(world.PrefixRun)
	f.mustAppend(first, ev("", &world.RunCreated{WorkflowName: testWorkflow, IdempotencyKey: key}))
	second := ids.New(world.PrefixRun)
	_, err := f.append(second, ev("", &world.RunCreated{WorkflowName: testWorkflow, IdempotencyKey: key}))
	e := wantRefusal(t, err, world.ErrConflict, "run_created with a taken idempotency key")
	if e.Entity != first || e.Key != key {
		t.Fatalf("refusal = {Entity %q, Key %q}, want {%q, %q}", e.Entity, e.Key, first, key)
	}
	if world.Status(err) != 409 {
		t.Fatalf("taken idempotency key: status %d, want 409", world.Status(err))
	}
	_, err = f.w.GetRun(f.ctx, &world.GetRunParams{RunID: second})
	wantErr(t, err, world.ErrNotFound, "GetRun of the run refused for its idempotency key")
	// Another key, and no key at all, are free.
	f.mustAppend(ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: testWorkflow, IdempotencyKey: key + "-other"}))
	f.createRun("")
	f.createRun("")
}

func testRunCreateInvalid(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		name  string
		runID string
		in    world.EventInput
	}{
		{"no workflow name", ids.New(world.PrefixRun), ev("", &world.RunCreated{})},
		{"invalid JSON input", ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: "w", Input: json.RawMessage(`{nope`)})},
		{"invalid JSON execution context", ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: "w", ExecutionContext: json.RawMessage(`[`)})},
		{"correlation ID on a run event", ids.New(world.PrefixRun), ev(ids.New(world.PrefixStep), &world.RunCreated{WorkflowName: "w"})},
		{"empty run ID", "", ev("", &world.RunCreated{WorkflowName: "w"})},
		{"run ID with another prefix", ids.New(world.PrefixStep), ev("", &world.RunCreated{WorkflowName: "w"})},
		{"run ID without a ULID", "wrun_123", ev("", &world.RunCreated{WorkflowName: "w"})},
		{"nil payload", ids.New(world.PrefixRun), ev("", nil)},
		{"workflow name not valid UTF-8", ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: "order\xff"})},
		{"workflow name with an escape sequence", ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: "esc\x1b[31mred"})},
		{"idempotency key with a newline", ids.New(world.PrefixRun), ev("", &world.RunCreated{WorkflowName: "w", IdempotencyKey: "new\nline"})},
	} {
		_, err := f.append(tc.runID, tc.in)
		wantErr(t, err, world.ErrInvalid, "run_created with %s", tc.name)
		if strings.HasPrefix(tc.runID, world.PrefixRun) {
			_, err := f.w.GetRun(f.ctx, &world.GetRunParams{RunID: tc.runID})
			wantErr(t, err, world.ErrNotFound, "GetRun after a refused run_created (%s)", tc.name)
		}
	}
}

func testRunStartPending(t *testing.T, f *fixture) {
	id := f.createRun("")
	before := time.Now()
	res := f.mustAppend(id, ev("", &world.RunStarted{}))
	e := res.Results[0].Event
	if e == nil || e.Type() != world.EventRunStarted || e.Seq != 2 {
		t.Fatalf("run_started on a pending run: got event %+v, want run_started with Seq 2", e)
	}
	if res.Run.Status != world.RunStatusRunning || res.Run.LastSeq != 2 {
		t.Fatalf("run_started: result run %q LastSeq %d, want running and 2", res.Run.Status, res.Run.LastSeq)
	}
	r := f.getRun(id)
	if r.Status != world.RunStatusRunning || r.StartedAt.Before(before.Add(-skew)) {
		t.Fatalf("GetRun after run_started: status %q StartedAt %v, want running and a start time", r.Status, r.StartedAt)
	}
}

func testRunStartRunning(t *testing.T, f *fixture) {
	id := f.startedRun()
	started := f.getRun(id).StartedAt
	res, err := f.append(id, ev("", &world.RunStarted{}))
	if err != nil {
		t.Fatalf("run_started on a running run: %v, want success without a new event", err)
	}
	if len(res.Results) != 1 || res.Results[0].Event != nil {
		t.Fatalf("run_started on a running run: results %+v, want one result with a nil Event", res.Results)
	}
	if res.Run == nil || res.Run.Status != world.RunStatusRunning || res.Run.LastSeq != 2 {
		t.Fatalf("run_started on a running run: result run %+v, want running with LastSeq 2", res.Run)
	}
	evs := f.events(id)
	if len(evs) != 2 || count(evs, world.EventRunStarted, "") != 1 {
		t.Fatalf("run_started twice: log has %d events (%d run_started), want 2 (1)", len(evs), count(evs, world.EventRunStarted, ""))
	}
	if r := f.getRun(id); !r.StartedAt.Equal(started) {
		t.Fatalf("run_started twice: StartedAt moved from %v to %v", started, r.StartedAt)
	}
}

func testRunStartFinished(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		f.endRun(id, how)
		before := f.events(id)
		_, err := f.append(id, ev("", &world.RunStarted{}))
		wantErr(t, err, world.ErrGone, "run_started on a run ended by %s", how)
		f.wantLogUnchanged(id, before, "refused run_started")
		if r := f.getRun(id); r.Status != terminalStatus(how) {
			t.Fatalf("refused run_started changed the status to %q", r.Status)
		}
	}
}

func testRunStartMissing(t *testing.T, f *fixture) {
	_, err := f.append(ids.New(world.PrefixRun), ev("", &world.RunStarted{}))
	wantErr(t, err, world.ErrNotFound, "run_started on a missing run")
}

func testRunEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		for _, from := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning} {
			id := f.createRun("")
			if from == world.RunStatusRunning {
				f.mustAppend(id, ev("", &world.RunStarted{}))
			}
			res := f.mustAppend(id, ev("", terminalData(how)))
			if e := res.Results[0].Event; e == nil || e.Type() != how {
				t.Fatalf("%s on a %s run: got event %s", how, from, eventType(e))
			}
			r := f.getRun(id)
			if r.Status != terminalStatus(how) || r.CompletedAt.IsZero() {
				t.Fatalf("%s on a %s run: status %q CompletedAt %v, want %q and a completion time", how, from, r.Status, r.CompletedAt, terminalStatus(how))
			}
			switch how {
			case world.EventRunCompleted:
				if !jsonEqual(r.Output, []byte(`"done"`)) {
					t.Fatalf("run_completed: output %s, want \"done\"", r.Output)
				}
			case world.EventRunFailed:
				if r.Error == nil || r.Error.Message != "boom" || r.ErrorCode != world.CodeUserError {
					t.Fatalf("run_failed: error %+v code %q, want boom and %s", r.Error, r.ErrorCode, world.CodeUserError)
				}
			case world.EventRunCancelled:
				if r.CancelReason != "worldtest" {
					t.Fatalf("run_cancelled: reason %q, want worldtest", r.CancelReason)
				}
			}
		}
	}
}

func testRunEndFinished(t *testing.T, f *fixture) {
	for _, first := range terminalRunEvents {
		for _, second := range []world.EventType{world.EventRunCompleted, world.EventRunFailed} {
			id := f.startedRun()
			f.endRun(id, first)
			before := f.events(id)
			_, err := f.append(id, ev("", terminalData(second)))
			wantErr(t, err, world.ErrConflict, "%s after %s", second, first)
			f.wantLogUnchanged(id, before, "refused "+string(second))
			if r := f.getRun(id); r.Status != terminalStatus(first) {
				t.Fatalf("%s after %s changed the status to %q", second, first, r.Status)
			}
		}
	}
}

func testRunCancelRepeated(t *testing.T, f *fixture) {
	id := f.startedRun()
	f.endRun(id, world.EventRunCancelled)
	for i := range 2 {
		res, err := f.append(id, ev("", &world.RunCancelled{Reason: "again"}))
		if err != nil {
			t.Fatalf("repeated run_cancelled #%d: %v, want success without a new event", i+1, err)
		}
		if len(res.Results) != 1 || res.Results[0].Event != nil {
			t.Fatalf("repeated run_cancelled: results %+v, want one result with a nil Event", res.Results)
		}
	}
	evs := f.events(id)
	terminal := count(evs, world.EventRunCancelled, "") + count(evs, world.EventRunCompleted, "") + count(evs, world.EventRunFailed, "")
	if terminal != 1 || len(evs) != 3 {
		t.Fatalf("after 3 run_cancelled: log has %d events, %d terminal; want 3 and exactly 1", len(evs), terminal)
	}
	if r := f.getRun(id); r.Status != world.RunStatusCancelled || r.CancelReason != "worldtest" {
		t.Fatalf("repeated run_cancelled: status %q reason %q, want cancelled with the first reason", r.Status, r.CancelReason)
	}
}

func testRunCancelFinished(t *testing.T, f *fixture) {
	for _, first := range []world.EventType{world.EventRunCompleted, world.EventRunFailed} {
		id := f.startedRun()
		f.endRun(id, first)
		before := f.events(id)
		_, err := f.append(id, ev("", &world.RunCancelled{}))
		wantErr(t, err, world.ErrConflict, "run_cancelled after %s", first)
		f.wantLogUnchanged(id, before, "refused run_cancelled")
	}
}

func testRunEventsInvalid(t *testing.T, f *fixture) {
	id := f.startedRun()
	for _, tc := range []struct {
		name string
		in   world.EventInput
	}{
		{"run_failed without an error", ev("", &world.RunFailed{ErrorCode: world.CodeUserError})},
		{"run_completed with invalid JSON output", ev("", &world.RunCompleted{Output: json.RawMessage(`{"x"`)})},
		{"run_started with a correlation ID", ev(ids.New(world.PrefixStep), &world.RunStarted{})},
		{"run_cancelled with a correlation ID", ev(ids.New(world.PrefixWait), &world.RunCancelled{})},
		{"run_held without an error", ev("", &world.RunHeld{ErrorCode: world.CodeReplayDivergence})},
		{"run_held without an error code", ev("", &world.RunHeld{Error: &world.ErrorData{Message: "m"}})},
		{"an event without payload", ev("", nil)},
	} {
		before := f.events(id)
		_, err := f.append(id, tc.in)
		wantErr(t, err, world.ErrInvalid, "%s", tc.name)
		f.wantLogUnchanged(id, before, tc.name)
	}
	if r := f.getRun(id); r.Status != world.RunStatusRunning {
		t.Fatalf("refused invalid events changed the run status to %q", r.Status)
	}
}

func testUnknownRun(t *testing.T, f *fixture) {
	step, hook, wait := ids.New(world.PrefixStep), ids.New(world.PrefixHook), ids.New(world.PrefixWait)
	for _, in := range []world.EventInput{
		ev("", &world.RunStarted{}),
		ev("", terminalData(world.EventRunCompleted)),
		ev("", terminalData(world.EventRunFailed)),
		ev("", terminalData(world.EventRunCancelled)),
		ev("", held(1, time.Now())),
		ev(step, &world.StepCreated{StepName: "s"}),
		ev(step, &world.StepStarted{}),
		ev(step, &world.StepCompleted{}),
		ev(step, &world.StepFailed{Error: stepError("x")}),
		ev(step, &world.StepRetrying{Error: stepError("x")}),
		ev(hook, &world.HookCreated{Token: token()}),
		ev(hook, &world.HookReceived{}),
		ev(hook, &world.HookDisposed{}),
		ev(wait, &world.WaitCreated{ResumeAt: time.Now()}),
		ev(wait, &world.WaitCompleted{}),
	} {
		runID := ids.New(world.PrefixRun)
		_, err := f.append(runID, in)
		wantErr(t, err, world.ErrNotFound, "%s on an unknown run", in.Type())
		_, err = f.w.GetRun(f.ctx, &world.GetRunParams{RunID: runID})
		wantErr(t, err, world.ErrNotFound, "GetRun after %s on an unknown run", in.Type())
	}
}

// testRunVersion checks that a run's code version (RunCreated.Version) is
// kept by GetRun and ListRuns, through a status change and the run's end
// (a World that stores the run in parts rewrites some of them then), and in
// the run_created event.
func testRunVersion(t *testing.T, f *fixture) {
	id := ids.New(world.PrefixRun)
	wf := "wf-version-" + id
	const v = "3f2a9c1d0b7e+dirty"
	f.mustAppend(id, ev("", &world.RunCreated{WorkflowName: wf, Version: v}))
	want := func(r *world.Run, what string) {
		t.Helper()
		if r == nil || r.Version != v {
			t.Fatalf("%s: run %+v, want version %q", what, r, v)
		}
	}
	want(f.getRun(id), "GetRun of a pending run")
	f.mustAppend(id, ev("", &world.RunStarted{}))
	want(f.getRun(id), "GetRun of a running run")
	p, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{WorkflowName: wf})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("ListRuns(workflow %s): %v, %d runs, want 1", wf, err, len(p.Items))
	}
	want(&p.Items[0], "ListRuns")
	f.mustAppend(id, ev("", &world.RunCompleted{Output: json.RawMessage(`1`)}))
	want(f.getRun(id), "GetRun of a completed run")
	d, ok := f.events(id)[0].Data.(*world.RunCreated)
	if !ok || d.Version != v {
		t.Fatalf("ListEvents: run_created %+v, want version %q", d, v)
	}
	other := f.createRun("wf-no-version")
	if r := f.getRun(other); r.Version != "" {
		t.Fatalf("GetRun of a run created without a version: version %q, want none", r.Version)
	}
}
