package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func stepCases() []testCase {
	return []testCase{
		{"create", testStepCreate},
		{"create_duplicate_conflict", testStepCreateDuplicate},
		{"create_on_finished_run_conflict", testStepCreateFinishedRun},
		{"create_invalid", testStepCreateInvalid},
		{"start_counts_attempts", testStepStartAttempts},
		{"start_default_lease", testStepStartDefaultLease},
		{"start_while_leased", testStepStartLeased},
		{"start_after_lease_expiry", testStepStartAfterExpiry},
		{"start_too_early", testStepStartTooEarly},
		{"start_after_retry_time", testStepStartAfterRetryTime},
		{"start_finished_step_conflict", testStepStartFinishedStep},
		{"start_missing_step_not_found", testStepStartMissing},
		{"finished_run_gone", testStepFinishedRunGone},
		{"retrying", testStepRetrying},
		{"end", testStepEnd},
		{"end_duplicate_conflict", testStepEndDuplicate},
		{"end_running_step_of_finished_run", testStepEndRunningOfFinishedRun},
		{"end_pending_step_of_finished_run_gone", testStepEndPendingOfFinishedRun},
		{"end_invalid", testStepEndInvalid},
	}
}

func testStepCreate(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := ids.New(world.PrefixStep)
	// The input digest the engine records (8 bytes of the SHA-256 sum of
	// the input, in hex); the World keeps it as given.
	digest := "7e84cbf0f7a7c92c"
	res := f.mustAppend(run, ev(id, &world.StepCreated{StepName: "charge", Input: json.RawMessage(`{"amount":5}`), InputDigest: digest}))
	r := res.Results[0]
	if r.Event == nil || r.Event.Type() != world.EventStepCreated || r.Event.Seq != 3 {
		t.Fatalf("step_created: got event %+v, want step_created with Seq 3", r.Event)
	}
	if r.Step == nil || r.Step.StepID != id || r.Step.Status != world.StepStatusPending {
		t.Fatalf("step_created: result step %+v, want pending %s", r.Step, id)
	}
	s := f.getStep(run, id)
	if s.StepName != "charge" || s.Status != world.StepStatusPending || s.Attempt != 0 || !jsonEqual(s.Input, []byte(`{"amount":5}`)) {
		t.Fatalf("GetStep after step_created: %+v", s)
	}
	if s.CreatedAt.IsZero() || !s.StartedAt.IsZero() || !s.LeaseExpiresAt.IsZero() {
		t.Fatalf("GetStep after step_created: CreatedAt %v StartedAt %v LeaseExpiresAt %v", s.CreatedAt, s.StartedAt, s.LeaseExpiresAt)
	}
	// Replay compares the input digest the log recorded: it must be kept.
	evs := f.events(run)
	if d, ok := evs[len(evs)-1].Data.(*world.StepCreated); !ok || d.InputDigest != digest {
		t.Fatalf("ListEvents after step_created: payload %+v, want inputDigest %s kept", evs[len(evs)-1].Data, digest)
	}
}

func testStepCreateDuplicate(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := ids.New(world.PrefixStep)
	f.mustAppend(run, ev(id, &world.StepCreated{StepName: "first"}))
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.StepCreated{StepName: "second"}))
	wantErr(t, err, world.ErrConflict, "duplicate step_created")
	f.wantLogUnchanged(run, before, "duplicate step_created")
	if s := f.getStep(run, id); s.StepName != "first" {
		t.Fatalf("duplicate step_created overwrote the step: name %q", s.StepName)
	}
	// A started step is no more creatable than a pending one.
	f.startStep(run, id, time.Minute)
	_, err = f.append(run, ev(id, &world.StepCreated{StepName: "first"}))
	wantErr(t, err, world.ErrConflict, "step_created for a running step")
	if s := f.getStep(run, id); s.Status != world.StepStatusRunning || s.Attempt != 1 {
		t.Fatalf("step_created for a running step reset it: status %q attempt %d", s.Status, s.Attempt)
	}
}

func testStepCreateFinishedRun(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		f.endRun(run, how)
		id := ids.New(world.PrefixStep)
		_, err := f.append(run, ev(id, &world.StepCreated{StepName: "late"}))
		wantErr(t, err, world.ErrConflict, "step_created on a run ended by %s", how)
		_, err = f.w.GetStep(f.ctx, &world.GetStepParams{RunID: run, StepID: id})
		wantErr(t, err, world.ErrNotFound, "GetStep of a refused step")
	}
}

func testStepCreateInvalid(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, tc := range []struct {
		name string
		in   world.EventInput
	}{
		{"no stepName", ev(ids.New(world.PrefixStep), &world.StepCreated{})},
		{"no correlation ID", ev("", &world.StepCreated{StepName: "s"})},
		{"a hook correlation ID", ev(ids.New(world.PrefixHook), &world.StepCreated{StepName: "s"})},
		{"a malformed step ID", ev("step_nope", &world.StepCreated{StepName: "s"})},
		{"invalid JSON input", ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s", Input: json.RawMessage(`{"a":`)})},
		{"a negative lease", ev(f.createStep(run), &world.StepStarted{LeaseTTL: -time.Second})},
	} {
		before := f.events(run)
		_, err := f.append(run, tc.in)
		wantErr(t, err, world.ErrInvalid, "step event with %s", tc.name)
		f.wantLogUnchanged(run, before, tc.name)
	}
}

func testStepStartAttempts(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	before := f.now()
	res := f.mustAppendOne(run, ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
	d, ok := res.Event.Data.(*world.StepStarted)
	if !ok || d.Attempt != 1 {
		t.Fatalf("first step_started: event payload %+v, want Attempt 1", res.Event.Data)
	}
	s := res.Step
	if s == nil || s.Status != world.StepStatusRunning || s.Attempt != 1 {
		t.Fatalf("first step_started: result step %+v, want running attempt 1", s)
	}
	if s.LeaseExpiresAt.Before(before.Add(time.Minute-skew)) || s.LeaseExpiresAt.After(f.now().Add(time.Minute+skew)) {
		t.Fatalf("step_started with a 1m lease: LeaseExpiresAt %v, want about %v", s.LeaseExpiresAt, before.Add(time.Minute))
	}
	if !sameTime(d.LeaseExpiresAt, s.LeaseExpiresAt) {
		t.Fatalf("step_started event LeaseExpiresAt %v differs from the step's %v", d.LeaseExpiresAt, s.LeaseExpiresAt)
	}
	firstStart := f.getStep(run, id).StartedAt
	if firstStart.IsZero() {
		t.Fatal("GetStep after step_started: StartedAt not set")
	}
	f.mustAppend(run, ev(id, &world.StepRetrying{Error: stepError("try again")}))
	s = f.mustAppendOne(run, ev(id, &world.StepStarted{LeaseTTL: time.Minute, Queued: true})).Step
	if s.Attempt != 2 || s.Status != world.StepStatusRunning || s.Interrupted != 0 {
		t.Fatalf("step_started after step_retrying: step %+v, want running attempt 2, none interrupted", s)
	}
	got := f.getStep(run, id)
	if got.Attempt != 2 || !got.StartedAt.Equal(firstStart) {
		t.Fatalf("GetStep after two attempts: attempt %d StartedAt %v, want 2 and the first start %v (set once)", got.Attempt, got.StartedAt, firstStart)
	}
	evs := f.events(run)
	if n := count(evs, world.EventStepStarted, id); n != 2 {
		t.Fatalf("log has %d step_started, want 2", n)
	}
	if d, _ := evs[len(evs)-1].Data.(*world.StepStarted); d == nil || d.Attempt != 2 || !d.Queued {
		t.Fatalf("second step_started as stored: %+v, want Attempt 2, Queued", evs[len(evs)-1].Data)
	}
	for _, e := range evs {
		if d, ok := e.Data.(*world.StepStarted); ok && d.Attempt == 1 && d.Queued {
			t.Fatalf("first step_started as stored: %+v, want not Queued", d)
		}
	}
}

func testStepStartDefaultLease(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	before := f.now()
	s := f.startStep(run, id, 0)
	if s.LeaseExpiresAt.Before(before.Add(world.DefaultStepLease - skew)) {
		t.Fatalf("step_started without a lease: LeaseExpiresAt %v, want about now+%v", s.LeaseExpiresAt, world.DefaultStepLease)
	}
}

func testStepStartLeased(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	s := f.startStep(run, id, time.Minute)
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
	e := wantStepLeased(t, err, "step_started on a step running under a live lease")
	if e.Entity != id || e.Attempt != 1 || !sameTime(e.Until, s.LeaseExpiresAt) {
		t.Fatalf("refusal = %+v, want step %s attempt 1 until %v", e, id, s.LeaseExpiresAt)
	}
	if world.Status(err) != 409 {
		t.Fatalf("leased step_started: status %d, want 409", world.Status(err))
	}
	f.wantLogUnchanged(run, before, "leased step_started")
	if got := f.getStep(run, id); got.Attempt != 1 {
		t.Fatalf("a refused step_started counted an attempt: attempt %d", got.Attempt)
	}
}

func testStepStartAfterExpiry(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	s := f.startStep(run, id, shortTTL)
	f.advancePast(s.LeaseExpiresAt)
	res := f.mustAppendOne(run, ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
	s = res.Step
	if s.Attempt != 2 || s.Status != world.StepStatusRunning || s.Interrupted != 1 {
		t.Fatalf("step_started after the lease expired: step %+v, want running attempt 2, 1 interrupted", s)
	}
	if d, _ := res.Event.Data.(*world.StepStarted); d == nil || d.Attempt != 2 || d.Interrupted != 1 {
		t.Fatalf("step_started after the lease expired: event %+v, want attempt 2, 1 interrupted", res.Event.Data)
	}
	if got := f.getStep(run, id); got.Interrupted != 1 {
		t.Fatalf("GetStep after an interrupted attempt: %d interrupted, want 1", got.Interrupted)
	}
	// The new attempt holds a fresh lease.
	_, err := f.append(run, ev(id, &world.StepStarted{}))
	wantStepLeased(t, err, "step_started during the second attempt's lease")
	// An attempt that fails and retries was not interrupted: the count stays.
	f.mustAppend(run, ev(id, &world.StepRetrying{Error: stepError("try again")}))
	res = f.mustAppendOne(run, ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
	if s := res.Step; s.Attempt != 3 || s.Interrupted != 1 {
		t.Fatalf("step_started after step_retrying: step %+v, want attempt 3, 1 interrupted", s)
	}
	evs := f.events(run)
	if d, _ := evs[len(evs)-1].Data.(*world.StepStarted); d == nil || d.Attempt != 3 || d.Interrupted != 1 {
		t.Fatalf("third step_started as stored: %+v, want attempt 3, 1 interrupted", evs[len(evs)-1].Data)
	}
	if got := f.getStep(run, id); got.Attempt != 3 || got.Interrupted != 1 {
		t.Fatalf("GetStep after three attempts: attempt %d, %d interrupted, want 3 and 1", got.Attempt, got.Interrupted)
	}
}

func testStepStartTooEarly(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	f.startStep(run, id, time.Minute)
	retryAt := f.now().Add(time.Minute)
	f.mustAppend(run, ev(id, &world.StepRetrying{Error: stepError("later"), RetryAfter: retryAt}))
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.StepStarted{}))
	e := wantRefusal(t, err, world.ErrTooEarly, "step_started before the retry time")
	if e.Entity != id || !sameTime(e.Until, retryAt) {
		t.Fatalf("refusal = %+v, want step %s retry after %v", e, id, retryAt)
	}
	if world.Status(err) != 425 {
		t.Fatalf("early step_started: status %d, want 425", world.Status(err))
	}
	f.wantLogUnchanged(run, before, "early step_started")
	if s := f.getStep(run, id); s.Status != world.StepStatusPending || s.Attempt != 1 {
		t.Fatalf("early step_started changed the step: status %q attempt %d", s.Status, s.Attempt)
	}
}

func testStepStartAfterRetryTime(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	f.startStep(run, id, time.Minute)
	retryAt := f.now().Add(shortTTL)
	f.mustAppend(run, ev(id, &world.StepRetrying{Error: stepError("soon"), RetryAfter: retryAt}))
	f.advancePast(retryAt)
	s := f.startStep(run, id, time.Minute)
	if s.Attempt != 2 || !s.RetryAfter.IsZero() {
		t.Fatalf("step_started after the retry time: attempt %d RetryAfter %v, want 2 and cleared", s.Attempt, s.RetryAfter)
	}
}

func testStepStartFinishedStep(t *testing.T, f *fixture) {
	for _, end := range []world.EventData{&world.StepCompleted{}, &world.StepFailed{Error: stepError("fatal")}} {
		run := f.startedRun()
		id := f.createStep(run)
		f.startStep(run, id, time.Minute)
		f.mustAppend(run, ev(id, end))
		before := f.events(run)
		_, err := f.append(run, ev(id, &world.StepStarted{}))
		wantErr(t, err, world.ErrConflict, "step_started after %s", typeOf(end))
		f.wantLogUnchanged(run, before, "step_started on a finished step")
		_, err = f.append(run, ev(id, &world.StepRetrying{Error: stepError("x")}))
		wantErr(t, err, world.ErrConflict, "step_retrying after %s", typeOf(end))
	}
}

func testStepStartMissing(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.append(run, ev(ids.New(world.PrefixStep), &world.StepStarted{}))
	wantErr(t, err, world.ErrNotFound, "step_started on a missing step")
	_, err = f.append(run, ev(ids.New(world.PrefixStep), &world.StepRetrying{Error: stepError("x")}))
	wantErr(t, err, world.ErrNotFound, "step_retrying on a missing step")
}

func testStepFinishedRunGone(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		pending := f.createStep(run)
		running := f.createStep(run)
		f.startStep(run, running, shortTTL)
		f.endRun(run, how)
		before := f.events(run)
		_, err := f.append(run, ev(pending, &world.StepStarted{}))
		wantErr(t, err, world.ErrGone, "step_started on a pending step of a run ended by %s", how)
		_, err = f.append(run, ev(running, &world.StepRetrying{Error: stepError("x")}))
		wantErr(t, err, world.ErrGone, "step_retrying on a running step of a run ended by %s", how)
		f.wantLogUnchanged(run, before, "step writes on a finished run")
		if s := f.getStep(run, pending); s.Status != world.StepStatusPending || s.Attempt != 0 {
			t.Fatalf("refused step_started changed the step: %+v", s)
		}
	}
	// Even with its lease expired, a running step of a finished run cannot be restarted.
	run := f.startedRun()
	id := f.createStep(run)
	s := f.startStep(run, id, shortTTL)
	f.endRun(run, world.EventRunCancelled)
	f.advancePast(s.LeaseExpiresAt)
	_, err := f.append(run, ev(id, &world.StepStarted{}))
	wantErr(t, err, world.ErrGone, "step_started on an expired running step of a cancelled run")
}

func testStepRetrying(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	f.startStep(run, id, time.Minute)
	retryAt := time.Now().Add(time.Hour)
	r := f.mustAppendOne(run, ev(id, &world.StepRetrying{Error: &world.ErrorData{Message: "flaky", Type: "Timeout"}, RetryAfter: retryAt}))
	if r.Step == nil || r.Step.Status != world.StepStatusPending {
		t.Fatalf("step_retrying: result step %+v, want pending", r.Step)
	}
	s := f.getStep(run, id)
	switch {
	case s.Status != world.StepStatusPending:
		t.Fatalf("step_retrying: status %q, want pending", s.Status)
	case s.Error == nil || s.Error.Message != "flaky" || s.Error.Type != "Timeout":
		t.Fatalf("step_retrying: error %+v not recorded", s.Error)
	case !sameTime(s.RetryAfter, retryAt):
		t.Fatalf("step_retrying: RetryAfter %v, want %v", s.RetryAfter, retryAt)
	case !s.LeaseExpiresAt.IsZero():
		t.Fatalf("step_retrying: LeaseExpiresAt %v, want cleared", s.LeaseExpiresAt)
	case s.Attempt != 1:
		t.Fatalf("step_retrying: attempt %d, want 1", s.Attempt)
	}
	evs := f.events(run)
	d, ok := evs[len(evs)-1].Data.(*world.StepRetrying)
	if !ok || d.Error == nil || d.Error.Message != "flaky" || !sameTime(d.RetryAfter, retryAt) {
		t.Fatalf("step_retrying as stored: %+v", evs[len(evs)-1].Data)
	}
}

func testStepEnd(t *testing.T, f *fixture) {
	run := f.startedRun()
	done := f.createStep(run)
	f.startStep(run, done, time.Minute)
	r := f.mustAppendOne(run, ev(done, &world.StepCompleted{Result: json.RawMessage(`{"ok":true}`)}))
	if r.Step == nil || r.Step.Status != world.StepStatusCompleted {
		t.Fatalf("step_completed: result step %+v", r.Step)
	}
	s := f.getStep(run, done)
	if s.Status != world.StepStatusCompleted || !jsonEqual(s.Output, []byte(`{"ok":true}`)) || s.CompletedAt.IsZero() || !s.LeaseExpiresAt.IsZero() {
		t.Fatalf("GetStep after step_completed: %+v", s)
	}
	failed := f.createStep(run)
	f.startStep(run, failed, time.Minute)
	f.mustAppend(run, ev(failed, &world.StepFailed{Error: &world.ErrorData{Message: "no", Fatal: true}}))
	s = f.getStep(run, failed)
	if s.Status != world.StepStatusFailed || s.Error == nil || s.Error.Message != "no" || !s.Error.Fatal || s.CompletedAt.IsZero() {
		t.Fatalf("GetStep after step_failed: %+v", s)
	}
	// Nothing requires a step to be started before it completes.
	direct := f.createStep(run)
	f.mustAppend(run, ev(direct, &world.StepCompleted{Result: json.RawMessage(`1`)}))
	if s := f.getStep(run, direct); s.Status != world.StepStatusCompleted {
		t.Fatalf("step_completed on a pending step of a live run: status %q", s.Status)
	}
}

func testStepEndDuplicate(t *testing.T, f *fixture) {
	ends := []world.EventData{&world.StepCompleted{Result: json.RawMessage(`1`)}, &world.StepFailed{Error: stepError("x")}}
	for _, first := range ends {
		for _, second := range ends {
			run := f.startedRun()
			id := f.createStep(run)
			f.startStep(run, id, time.Minute)
			f.mustAppend(run, ev(id, first))
			before := f.events(run)
			_, err := f.append(run, ev(id, second))
			wantErr(t, err, world.ErrConflict, "%s after %s", typeOf(second), typeOf(first))
			f.wantLogUnchanged(run, before, "second terminal step event")
			want := world.StepStatusCompleted
			if typeOf(first) == world.EventStepFailed {
				want = world.StepStatusFailed
			}
			if s := f.getStep(run, id); s.Status != want {
				t.Fatalf("%s after %s changed the status to %q", typeOf(second), typeOf(first), s.Status)
			}
		}
	}
}

func testStepEndRunningOfFinishedRun(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		ok := f.createStep(run)
		bad := f.createStep(run)
		f.startStep(run, ok, time.Minute)
		f.startStep(run, bad, time.Minute)
		f.endRun(run, how)
		f.mustAppend(run, ev(ok, &world.StepCompleted{Result: json.RawMessage(`"late"`)}))
		f.mustAppend(run, ev(bad, &world.StepFailed{Error: stepError("late")}))
		if s := f.getStep(run, ok); s.Status != world.StepStatusCompleted || !jsonEqual(s.Output, []byte(`"late"`)) {
			t.Fatalf("completing a running step of a run ended by %s: step %+v", how, s)
		}
		if s := f.getStep(run, bad); s.Status != world.StepStatusFailed {
			t.Fatalf("failing a running step of a run ended by %s: status %q", how, s.Status)
		}
		if r := f.getRun(run); r.Status != terminalStatus(how) {
			t.Fatalf("a late step result changed the run's status to %q", r.Status)
		}
	}
}

func testStepEndPendingOfFinishedRun(t *testing.T, f *fixture) {
	for _, end := range []world.EventData{&world.StepCompleted{}, &world.StepFailed{Error: stepError("x")}} {
		run := f.startedRun()
		id := f.createStep(run)
		f.endRun(run, world.EventRunCancelled)
		before := f.events(run)
		_, err := f.append(run, ev(id, end))
		wantErr(t, err, world.ErrGone, "%s on a pending step of a cancelled run", typeOf(end))
		f.wantLogUnchanged(run, before, "ending a pending step of a finished run")
	}
}

func testStepEndInvalid(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createStep(run)
	f.startStep(run, id, time.Minute)
	for _, tc := range []struct {
		name string
		in   world.EventInput
	}{
		{"step_failed without an error", ev(id, &world.StepFailed{})},
		{"step_retrying without an error", ev(id, &world.StepRetrying{})},
		{"step_completed with invalid JSON", ev(id, &world.StepCompleted{Result: json.RawMessage(`nope`)})},
		{"step_completed with a wait ID", ev(ids.New(world.PrefixWait), &world.StepCompleted{})},
	} {
		_, err := f.append(run, tc.in)
		wantErr(t, err, world.ErrInvalid, "%s", tc.name)
	}
	if s := f.getStep(run, id); s.Status != world.StepStatusRunning {
		t.Fatalf("invalid step events changed the step to %q", s.Status)
	}
	_, err := f.append(run, ev(ids.New(world.PrefixStep), &world.StepCompleted{}))
	wantErr(t, err, world.ErrNotFound, "step_completed on a missing step")
}
