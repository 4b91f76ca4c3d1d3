package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// The compensation cases about attempts: concurrent outcomes and starts,
// lease takeovers, retries, a failure for good (see compensationCases).

func testCompRace(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	errs := race(f.o.Racers, func(i int) error {
		var d world.EventData = &world.CompSucceeded{}
		if i%2 == 1 {
			d = &world.CompFailed{Error: stepError("x")}
		}
		_, err := f.append(run, ev(step, d))
		return err
	})
	oneWinner(t, "concurrent outcomes of one compensation", errs, isErr(world.ErrConflict))
	evs := f.events(run)
	if n := count(evs, world.EventCompSucceeded, step) + count(evs, world.EventCompFailed, step); n != 1 {
		t.Fatalf("the log holds %d outcomes of one compensation after a race, want 1", n)
	}
	c := f.getRun(run).Compensations
	if c.Succeeded+c.Failed != 1 || c.Running != 0 || c.Owed != 0 {
		t.Fatalf("counts after a race: %+v, want one outcome", c)
	}
	// Concurrent starts of an owed compensation: one claims it.
	other := f.compensableStep(run)
	errs = race(f.o.Racers, func(int) error {
		_, err := f.append(run, ev(other, &world.CompStarted{LeaseTTL: time.Minute}))
		return err
	})
	oneWinner(t, "concurrent comp_started", errs, isErr(world.ErrConflict))
	if n := count(f.events(run), world.EventCompStarted, other); n != 1 {
		t.Fatalf("the log holds %d comp_started after a race, want 1", n)
	}
	if c := f.getRun(run).Compensations; c.Running != 1 || c.Owed != 0 {
		t.Fatalf("counts after a race of starts: %+v", c)
	}
}

func testCompTakeover(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	r := f.mustAppendOne(run, ev(step, &world.CompStarted{LeaseTTL: shortTTL}))
	lease := r.Step.Compensation.LeaseExpiresAt
	before := f.events(run)
	_, err := f.append(run, ev(step, &world.CompStarted{}))
	e := wantStepLeased(t, err, "comp_started under a live lease")
	if e.Entity != step || e.Attempt != 1 || !sameTime(e.Until, lease) || world.Status(err) != 409 {
		t.Fatalf("refusal = %+v (status %d), want step %s attempt 1 until %v", e, world.Status(err), step, lease)
	}
	f.wantLogUnchanged(run, before, "leased comp_started")
	f.advancePast(lease)
	r = f.mustAppendOne(run, ev(step, &world.CompStarted{LeaseTTL: time.Minute}))
	if c := r.Step.Compensation; c.Attempt != 2 || c.Interrupted != 1 {
		t.Fatalf("comp_started after the lease expired: %+v, want attempt 2, 1 interrupted", c)
	}
	if d, _ := r.Event.Data.(*world.CompStarted); d == nil || d.Attempt != 2 || d.Interrupted != 1 {
		t.Fatalf("comp_started after the lease expired: event %+v", r.Event.Data)
	}
	if s := f.wantComp(run, step, world.StepStatusCompensating, 2, "takeover"); s.Compensation.Interrupted != 1 {
		t.Fatalf("GetStep after a takeover: %+v", s.Compensation)
	}
	f.wantCounts(run, nil, world.Compensations{Running: 1}, "a takeover counts no new compensation")
}

func testCompTooEarly(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	retryAt := f.now().Add(shortTTL)
	f.mustAppend(run, ev(step, &world.CompRetryScheduled{Error: stepError("later"), RetryAfter: retryAt}))
	if s := f.getStep(run, step); !sameTime(s.Compensation.RetryAfter, retryAt) {
		t.Fatalf("GetStep: RetryAfter %v, want %v", s.Compensation.RetryAfter, retryAt)
	}
	before := f.events(run)
	_, err := f.append(run, ev(step, &world.CompStarted{}))
	e := wantRefusal(t, err, world.ErrTooEarly, "comp_started before the retry time")
	if e.Entity != step || !sameTime(e.Until, retryAt) || world.Status(err) != 425 {
		t.Fatalf("refusal = %+v (status %d), want step %s retry after %v", e, world.Status(err), step, retryAt)
	}
	f.wantLogUnchanged(run, before, "early comp_started")
	f.advancePast(retryAt)
	r := f.mustAppendOne(run, ev(step, &world.CompStarted{}))
	if c := r.Step.Compensation; c.Attempt != 2 || c.Interrupted != 0 || !c.RetryAfter.IsZero() {
		t.Fatalf("comp_started after the retry time: %+v, want attempt 2, none interrupted", c)
	}
}

func testCompFailed(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev("", &world.RunFailed{Error: stepError("boom"), Compensate: true}))
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	res := f.mustAppend(run, ev(step, &world.CompFailed{Error: &world.ErrorData{Type: "RefundError", Message: "card closed"}}))
	s := f.wantComp(run, step, world.StepStatusCompensationFailed, 1, "comp_failed")
	if e := s.Compensation.Error; e == nil || e.Type != "RefundError" || e.Message != "card closed" || s.Compensation.EndedAt.IsZero() {
		t.Fatalf("comp_failed: compensation %+v", s.Compensation)
	}
	if !s.Status.Terminal() {
		t.Fatal("compensation_failed is not terminal")
	}
	f.wantCounts(run, res.Run, world.Compensations{Failed: 1}, "comp_failed")
	p, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: run})
	if err != nil || len(p.Items) != 1 || p.Items[0].Status != world.StepStatusCompensationFailed || p.Items[0].Compensation == nil || p.Items[0].Compensation.Error == nil {
		t.Fatalf("ListSteps after comp_failed: %+v, %v", p, err)
	}
	if r := f.mustAppend(run, ev("", &world.RunDeactivated{})).Run; !r.Deactivated() || r.Compensations.Failed != 1 {
		t.Fatalf("run_deactivated after a failed compensation: %+v", r)
	}
}

// testCompCreatedAndStarted: a step created and started in one Append
// (which a World may store differently from one created alone) keeps its
// compensation, and its completion owes it.
func testCompCreatedAndStarted(t *testing.T, f *fixture) {
	run := f.startedRun()
	steps := []string{ids.New(world.PrefixStep), ids.New(world.PrefixStep)}
	for _, id := range steps {
		f.mustAppend(run, ev(id, &world.StepCreated{StepName: "worldtest-do", Compensation: compName}), ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
		if s := f.getStep(run, id); s.Status != world.StepStatusRunning || s.Compensation == nil || s.Compensation.Step != compName {
			t.Fatalf("GetStep of a step created and started in one append: %s compensation %+v", s.Status, s.Compensation)
		}
	}
	for i, id := range steps {
		r := f.mustAppend(run, ev(id, &world.StepCompleted{Result: json.RawMessage(`"done"`)}))
		f.wantCounts(run, r.Run, world.Compensations{Owed: i + 1}, "a step created and started in one append completed")
	}
	r := f.mustAppend(run, ev(steps[1], &world.CompStarted{}), ev(steps[1], &world.CompSucceeded{}), ev(steps[0], &world.CompStarted{}))
	f.wantCounts(run, r.Run, world.Compensations{Running: 1, Succeeded: 1}, "compensations of steps created and started in one append")
	f.wantComp(run, steps[0], world.StepStatusCompensating, 1, "first")
	f.wantComp(run, steps[1], world.StepStatusCompensated, 1, "second")
}

// testCompWatchAll: an every-run watch delivers what a run records after
// its end (its compensations, run_deactivated), committed after the watch
// saw the end.
func testCompWatchAll(t *testing.T, f *fixture) {
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{})
	if err != nil {
		t.Fatalf("WatchCursor: %v", err)
	}
	w := f.watch(world.WatchParams{After: c, Types: []world.EventType{world.EventRunFailed, world.EventCompStarted, world.EventCompSucceeded, world.EventRunDeactivated}})
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev("", &world.RunFailed{Error: stepError("boom"), Compensate: true}))
	if e := w.next(); e.Event.Type() != world.EventRunFailed || e.Event.RunID != run {
		t.Fatalf("watched %s of %s, want run_failed of %s", e.Event.Type(), e.Event.RunID, run)
	}
	time.Sleep(f.d(100 * time.Millisecond)) // the watch looks again after the end
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	f.mustAppend(run, ev(step, &world.CompSucceeded{}))
	f.mustAppend(run, ev("", &world.RunDeactivated{}))
	for _, want := range []world.EventType{world.EventCompStarted, world.EventCompSucceeded, world.EventRunDeactivated} {
		if e := w.next(); e.Event.Type() != want || e.Event.RunID != run {
			t.Fatalf("watched %s of %s, want %s of %s", e.Event.Type(), e.Event.RunID, want, run)
		}
	}
}
