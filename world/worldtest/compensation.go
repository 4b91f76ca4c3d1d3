package worldtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// compensationCases: a step's compensation, as every World stores and
// judges it. step_created names the compensation (Step.Compensation);
// once the step completed, comp_started claims an attempt under a lease,
// comp_retry_scheduled records a failed one, comp_succeeded and
// comp_failed end it, all correlated to the step; the run counts them
// (Run.Compensations) and run_deactivated waits for them. A compensation
// runs while the run is active or after its end, never after
// run_deactivated, and is recorded at most once.
func compensationCases() []testCase {
	return []testCase{
		{"declared_round_trip", testCompDeclared},
		{"compensate_while_active", testCompWhileActive},
		{"refusals", testCompRefusals},
		{"after_failure_then_deactivate", testCompAfterFailure},
		{"cancel_with_compensation", testCompCancel},
		{"running_refuses_deactivation", testCompRunningRefusesDeactivation},
		{"refused_after_deactivation", testCompAfterDeactivation},
		{"several_in_one_append", testCompOneAppend},
		{"second_succeeded_refused", testCompSecondSucceeded},
		{"succeeded_race_one_winner", testCompRace},
		{"lease_takeover", testCompTakeover},
		{"retry_too_early", testCompTooEarly},
		{"failed_for_good", testCompFailed},
		{"created_and_started_in_one_append", testCompCreatedAndStarted},
		{"every_run_watch_after_end", testCompWatchAll},
		{"comp_lease_renew", testCompLeaseRenew},
		{"comp_lease_renew_refusals", testCompLeaseRenewRefused},
		{"comp_lease_superseded", testCompLeaseSuperseded},
	}
}

const compName = "worldtest-undo"

// compensableStep creates a step that declares compName as its
// compensation, starts it and completes it.
func (f *fixture) compensableStep(runID string) string {
	f.t.Helper()
	id := ids.New(world.PrefixStep)
	f.mustAppend(runID, ev(id, &world.StepCreated{StepName: "worldtest-do", Input: json.RawMessage(`{"n":1}`), Compensation: compName}))
	f.startStep(runID, id, time.Minute)
	f.mustAppend(runID, ev(id, &world.StepCompleted{Result: json.RawMessage(`"done"`)}))
	return id
}

// wantCounts checks a run's compensation counts as Append returned it and
// as GetRun reads it.
func (f *fixture) wantCounts(runID string, fromAppend *world.Run, want world.Compensations, what string) {
	f.t.Helper()
	if fromAppend != nil && fromAppend.Compensations != want {
		f.t.Fatalf("%s: Append's run counts %+v, want %+v", what, fromAppend.Compensations, want)
	}
	if got := f.getRun(runID).Compensations; got != want {
		f.t.Fatalf("%s: GetRun counts %+v, want %+v", what, got, want)
	}
}

// wantComp checks a step's status and compensation as GetStep reads it,
// and returns the step.
func (f *fixture) wantComp(runID, stepID string, status world.StepStatus, attempt int, what string) *world.Step {
	f.t.Helper()
	s := f.getStep(runID, stepID)
	if s.Status != status || s.Compensation == nil || s.Compensation.Step != compName || s.Compensation.Attempt != attempt {
		f.t.Fatalf("%s: GetStep: status %s compensation %+v, want %s at attempt %d of %s", what, s.Status, s.Compensation, status, attempt, compName)
	}
	if string(s.Output) != `"done"` {
		f.t.Fatalf("%s: the step's result %s is lost, want \"done\"", what, s.Output)
	}
	return s
}

func testCompDeclared(t *testing.T, f *fixture) {
	run := f.startedRun()
	with, without := ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	res := f.mustAppend(run,
		ev(with, &world.StepCreated{StepName: "charge", Compensation: compName}),
		ev(without, &world.StepCreated{StepName: "notify"}))
	if s := res.Results[0].Step; s == nil || s.Compensation == nil || *s.Compensation != (world.StepCompensation{Step: compName}) {
		t.Fatalf("step_created with a compensation: Append's step %+v", s)
	}
	if s := res.Results[1].Step; s == nil || s.Compensation != nil {
		t.Fatalf("step_created without a compensation: Append's step %+v", s)
	}
	if s := f.getStep(run, with); s.Compensation == nil || *s.Compensation != (world.StepCompensation{Step: compName}) {
		t.Fatalf("GetStep: compensation %+v, want %s untouched", s.Compensation, compName)
	}
	if s := f.getStep(run, without); s.Compensation != nil {
		t.Fatalf("GetStep of a step without compensation: %+v", s.Compensation)
	}
	p, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: run})
	if err != nil || len(p.Items) != 2 {
		t.Fatalf("ListSteps: %+v, %v", p, err)
	}
	for _, s := range p.Items {
		if got := s.Compensation != nil && s.Compensation.Step == compName; got != (s.StepID == with) {
			t.Fatalf("ListSteps: step %s compensation %+v", s.StepID, s.Compensation)
		}
	}
	evs := f.events(run)
	if d, ok := evs[2].Data.(*world.StepCreated); !ok || d.Compensation != compName {
		t.Fatalf("stored step_created: %+v, want compensation %s", evs[2].Data, compName)
	}
	// Completing it owes the compensation; the other owes none.
	f.startStep(run, with, time.Minute)
	f.startStep(run, without, time.Minute)
	r := f.mustAppend(run, ev(with, &world.StepCompleted{Result: json.RawMessage(`1`)}), ev(without, &world.StepCompleted{}))
	f.wantCounts(run, r.Run, world.Compensations{Owed: 1}, "two steps completed, one compensable")
	for _, bad := range []string{strings.Repeat("u", world.MaxNameLength+1), "un\x00do"} {
		_, err := f.append(run, ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s", Compensation: bad}))
		wantErr(t, err, world.ErrInvalid, "step_created with compensation %q", bad)
	}
}

func testCompWhileActive(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.wantCounts(run, nil, world.Compensations{Owed: 1}, "completed")
	before := time.Now()
	r := f.mustAppendOne(run, ev(step, &world.CompStarted{LeaseTTL: time.Minute}))
	if s := r.Step; s == nil || s.Status != world.StepStatusCompensating || s.Compensation == nil || s.Compensation.Attempt != 1 ||
		s.Compensation.LeaseExpiresAt.Before(before.Add(time.Minute-skew)) || s.Compensation.StartedAt.Before(before.Add(-skew)) {
		t.Fatalf("comp_started: Append's step %+v compensation %+v", s, compOf(s))
	}
	d, ok := r.Event.Data.(*world.CompStarted)
	if !ok || d.Compensation != compName || d.Attempt != 1 || d.StepName != "worldtest-do" || d.LeaseTTL != time.Minute || !sameTime(d.LeaseExpiresAt, r.Step.Compensation.LeaseExpiresAt) {
		t.Fatalf("comp_started as appended: %+v", r.Event.Data)
	}
	f.wantCounts(run, nil, world.Compensations{Running: 1}, "comp_started")
	f.wantComp(run, step, world.StepStatusCompensating, 1, "comp_started")
	res := f.mustAppend(run, ev(step, &world.CompRetryScheduled{Error: stepError("declined")}))
	s := f.wantComp(run, step, world.StepStatusCompensating, 1, "comp_retry_scheduled")
	if s.Compensation.Error == nil || s.Compensation.Error.Message != "declined" || !s.Compensation.LeaseExpiresAt.IsZero() {
		t.Fatalf("comp_retry_scheduled: compensation %+v, want the error and no lease", s.Compensation)
	}
	f.wantCounts(run, res.Run, world.Compensations{Running: 1}, "comp_retry_scheduled")
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	res = f.mustAppend(run, ev(step, &world.CompSucceeded{}))
	s = f.wantComp(run, step, world.StepStatusCompensated, 2, "comp_succeeded")
	if c := s.Compensation; c.Error != nil || c.EndedAt.IsZero() || !c.LeaseExpiresAt.IsZero() || c.Interrupted != 0 {
		t.Fatalf("comp_succeeded: compensation %+v", c)
	}
	f.wantCounts(run, res.Run, world.Compensations{Succeeded: 1}, "comp_succeeded")
	if r := f.getRun(run); r.Status != world.RunStatusRunning || r.Compensate {
		t.Fatalf("after a compensation of an active run: %s compensate %v, want running, not asked", r.Status, r.Compensate)
	}
	// The run goes on: new steps, and its end.
	f.createStep(run)
	f.endRun(run, world.EventRunCompleted)
	f.mustAppend(run, ev("", &world.RunDeactivated{}))
	// The step's events, by correlation: its own, then its compensation's.
	p, err := f.w.ListEventsByCorrelation(f.ctx, &world.ListEventsByCorrelationParams{RunID: run, CorrelationID: step, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		t.Fatalf("ListEventsByCorrelation(%s): %v", step, err)
	}
	want := []world.EventType{world.EventStepCreated, world.EventStepStarted, world.EventStepCompleted,
		world.EventCompStarted, world.EventCompRetryScheduled, world.EventCompStarted, world.EventCompSucceeded}
	got := []world.EventType{}
	for _, e := range p.Items {
		got = append(got, e.Type())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the step's events by correlation: %v, want %v", got, want)
	}
}

func compOf(s *world.Step) *world.StepCompensation {
	if s == nil {
		return nil
	}
	return s.Compensation
}

func testCompRefusals(t *testing.T, f *fixture) {
	run := f.startedRun()
	plain := f.createStep(run)
	f.startStep(run, plain, time.Minute)
	f.mustAppend(run, ev(plain, &world.StepCompleted{}))
	pending, running, failed := ids.New(world.PrefixStep), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	for _, id := range []string{pending, running, failed} {
		f.mustAppend(run, ev(id, &world.StepCreated{StepName: "s", Compensation: compName}))
	}
	f.startStep(run, running, time.Minute)
	f.startStep(run, failed, time.Minute)
	f.mustAppend(run, ev(failed, &world.StepFailed{Error: stepError("x")}))
	done := f.compensableStep(run)
	before := f.events(run)
	all := []world.EventData{&world.CompStarted{}, &world.CompRetryScheduled{Error: stepError("x")}, &world.CompSucceeded{}, &world.CompFailed{Error: stepError("x")}}
	for _, d := range all {
		_, err := f.append(run, ev(ids.New(world.PrefixStep), d))
		wantErr(t, err, world.ErrNotFound, "%s of a step that does not exist", typeOf(d))
		_, err = f.append(ids.New(world.PrefixRun), ev(done, d))
		wantErr(t, err, world.ErrNotFound, "%s in a run that does not exist", typeOf(d))
		_, err = f.append(run, ev(plain, d))
		wantErr(t, err, world.ErrConflict, "%s of a step that declares no compensation", typeOf(d))
		for what, id := range map[string]string{"pending": pending, "running": running, "failed": failed} {
			_, err = f.append(run, ev(id, d))
			wantErr(t, err, world.ErrConflict, "%s of a %s step", typeOf(d), what)
		}
		_, err = f.append(run, ev(ids.New(world.PrefixHook), d))
		wantErr(t, err, world.ErrInvalid, "%s correlated to a hook", typeOf(d))
		if typeOf(d) != world.EventCompStarted {
			_, err = f.append(run, ev(done, d))
			wantErr(t, err, world.ErrConflict, "%s of a completed step not compensating", typeOf(d))
		}
	}
	_, err := f.append(run, ev(done, &world.CompStarted{LeaseTTL: -time.Second}))
	wantErr(t, err, world.ErrInvalid, "comp_started with a negative lease")
	_, err = f.append(run, ev(done, &world.CompFailed{}))
	wantErr(t, err, world.ErrInvalid, "comp_failed without an error")
	f.wantLogUnchanged(run, before, "refused comp events")
	f.wantCounts(run, nil, world.Compensations{Owed: 1}, "after refused comp events")
	// The step's own events no longer apply to a compensating step.
	f.mustAppend(run, ev(done, &world.CompStarted{}))
	for _, d := range []world.EventData{&world.StepStarted{}, &world.StepCompleted{}, &world.StepFailed{Error: stepError("x")}} {
		_, err := f.append(run, ev(done, d))
		wantErr(t, err, world.ErrConflict, "%s of a compensating step", typeOf(d))
	}
}

func testCompAfterFailure(t *testing.T, f *fixture) {
	run := f.startedRun()
	first, second := f.compensableStep(run), f.compensableStep(run)
	late := ids.New(world.PrefixStep)
	f.mustAppend(run, ev(late, &world.StepCreated{StepName: "worldtest-do", Compensation: compName}))
	f.startStep(run, late, time.Minute)
	res := f.mustAppend(run, ev("", &world.RunFailed{Error: stepError("boom"), ErrorCode: world.CodeUserError, Compensate: true}))
	for what, r := range map[string]*world.Run{"Append": res.Run, "GetRun": f.getRun(run), "ListRuns": f.listed(run, world.RunStatusFailed)} {
		if r == nil || r.Status != world.RunStatusFailed || !r.Compensate || r.Compensations != (world.Compensations{Owed: 2}) {
			t.Fatalf("%s after run_failed{compensate}: %+v", what, r)
		}
	}
	deactivate := func(what string) {
		t.Helper()
		before := f.events(run)
		_, err := f.append(run, ev("", &world.RunDeactivated{}))
		wantErr(t, err, world.ErrConflict, "run_deactivated %s", what)
		f.wantLogUnchanged(run, before, "refused run_deactivated")
	}
	deactivate("while two compensations are owed")
	// The step running at the end completes: it owes one too.
	r := f.mustAppend(run, ev(late, &world.StepCompleted{Result: json.RawMessage(`"done"`)}))
	f.wantCounts(run, r.Run, world.Compensations{Owed: 3}, "a running step completed after the end")
	for i, id := range []string{late, second, first} {
		f.mustAppend(run, ev(id, &world.CompStarted{}))
		deactivate("while a compensation runs")
		r := f.mustAppend(run, ev(id, &world.CompSucceeded{}))
		f.wantCounts(run, r.Run, world.Compensations{Owed: 2 - i, Succeeded: i + 1}, "compensations after the end")
		f.wantComp(run, id, world.StepStatusCompensated, 1, "compensated after the end")
		if i < 2 {
			deactivate("while a compensation is owed")
		}
	}
	res = f.mustAppend(run, ev("", &world.RunDeactivated{}))
	if r := res.Run; !r.Deactivated() || r.Status != world.RunStatusFailed || r.Compensations != (world.Compensations{Succeeded: 3}) {
		t.Fatalf("run_deactivated once all compensated: %+v", r)
	}
	if r := f.getRun(run); !r.Deactivated() || !r.Compensate || r.Compensations != (world.Compensations{Succeeded: 3}) {
		t.Fatalf("GetRun after run_deactivated: deactivated %v compensate %v counts %+v", r.Deactivated(), r.Compensate, r.Compensations)
	}
	evs := f.events(run)
	end := 0
	for i, e := range evs {
		if e.Type() == world.EventRunFailed {
			end = i
		}
	}
	if n := count(evs[end:], world.EventCompSucceeded, ""); n != 3 {
		t.Fatalf("the log holds %d comp_succeeded after run_failed, want 3", n)
	}
}

func testCompCancel(t *testing.T, f *fixture) {
	for _, compensate := range []bool{true, false} {
		run := f.startedRun()
		step := f.compensableStep(run)
		res := f.mustAppend(run, ev("", &world.RunCancelled{Reason: "worldtest", Compensate: compensate}))
		if r := f.getRun(run); r.Compensate != compensate || res.Run.Compensate != compensate || r.Status != world.RunStatusCancelled {
			t.Fatalf("run_cancelled{compensate:%v}: GetRun %s compensate %v, Append %v", compensate, r.Status, r.Compensate, res.Run.Compensate)
		}
		_, err := f.append(run, ev("", &world.RunDeactivated{}))
		if !compensate {
			if err != nil {
				t.Fatalf("run_deactivated of a cancelled run that did not ask for compensation, one owed: %v", err)
			}
			continue
		}
		wantErr(t, err, world.ErrConflict, "run_deactivated of a cancelled run owing a compensation")
		f.mustAppend(run, ev(step, &world.CompStarted{}), ev(step, &world.CompSucceeded{}))
		f.mustAppend(run, ev("", &world.RunDeactivated{}))
	}
}

func testCompRunningRefusesDeactivation(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	f.endRun(run, world.EventRunCompleted)
	_, err := f.append(run, ev("", &world.RunDeactivated{}))
	wantErr(t, err, world.ErrConflict, "run_deactivated while a compensation runs (not asked for by the end)")
	f.mustAppend(run, ev(step, &world.CompRetryScheduled{Error: stepError("again")}))
	_, err = f.append(run, ev("", &world.RunDeactivated{}))
	wantErr(t, err, world.ErrConflict, "run_deactivated while a compensation waits for its retry")
	f.mustAppend(run, ev(step, &world.CompStarted{}), ev(step, &world.CompFailed{Error: stepError("gone")}))
	f.mustAppend(run, ev("", &world.RunDeactivated{}))
}

func testCompAfterDeactivation(t *testing.T, f *fixture) {
	run := f.startedRun()
	owed, compensating := f.compensableStep(run), f.compensableStep(run)
	f.mustAppend(run, ev(compensating, &world.CompStarted{}), ev(compensating, &world.CompRetryScheduled{Error: stepError("x")}))
	f.mustAppend(run, ev(compensating, &world.CompStarted{}), ev(compensating, &world.CompSucceeded{}))
	f.endRun(run, world.EventRunFailed) // not asking for compensation: the owed one may stay owed
	f.mustAppend(run, ev("", &world.RunDeactivated{}))
	before := f.events(run)
	for _, d := range []world.EventData{&world.CompStarted{}, &world.CompSucceeded{}, &world.CompFailed{Error: stepError("x")}} {
		for _, id := range []string{owed, compensating} {
			_, err := f.append(run, ev(id, d))
			wantErr(t, err, world.ErrGone, "%s after run_deactivated", typeOf(d))
		}
	}
	f.wantLogUnchanged(run, before, "comp events after run_deactivated")
	f.wantComp(run, owed, world.StepStatusCompleted, 0, "owed after run_deactivated")
}

func testCompOneAppend(t *testing.T, f *fixture) {
	run := f.startedRun()
	a, b := f.compensableStep(run), f.compensableStep(run)
	c := ids.New(world.PrefixStep)
	f.mustAppend(run, ev(c, &world.StepCreated{StepName: "worldtest-do", Compensation: compName}))
	f.startStep(run, c, time.Minute)
	res := f.mustAppend(run,
		ev(c, &world.StepCompleted{Result: json.RawMessage(`"done"`)}),
		ev(c, &world.CompStarted{}),
		ev(c, &world.CompSucceeded{}),
		ev(b, &world.CompStarted{}),
		ev(b, &world.CompFailed{Error: stepError("no")}),
		ev(a, &world.CompStarted{LeaseTTL: time.Minute}),
		ev("", &world.RunFailed{Error: stepError("boom"), Compensate: true}),
	)
	wantTypes := []world.EventType{world.EventStepCompleted, world.EventCompStarted, world.EventCompSucceeded, world.EventCompStarted, world.EventCompFailed, world.EventCompStarted, world.EventRunFailed}
	for i, r := range res.Results {
		if r.Event == nil || r.Event.Type() != wantTypes[i] || r.Event.Seq != res.Run.LastSeq-int64(len(wantTypes)-1-i) {
			t.Fatalf("result %d: %s, want %s in sequence", i, eventType(r.Event), wantTypes[i])
		}
	}
	if s := res.Results[2].Step; s == nil || s.Status != world.StepStatusCompensated {
		t.Fatalf("comp_succeeded in one append with its start: step %+v", s)
	}
	f.wantCounts(run, res.Run, world.Compensations{Running: 1, Succeeded: 1, Failed: 1}, "one append of several comp events")
	f.wantComp(run, c, world.StepStatusCompensated, 1, "c")
	f.wantComp(run, b, world.StepStatusCompensationFailed, 1, "b")
	f.wantComp(run, a, world.StepStatusCompensating, 1, "a")
	// A refused event refuses the whole append.
	before := f.events(run)
	_, err := f.append(run, ev(a, &world.CompSucceeded{}), ev(b, &world.CompSucceeded{}))
	wantErr(t, err, world.ErrConflict, "an append whose second comp_succeeded is refused")
	f.wantLogUnchanged(run, before, "refused append")
	f.wantComp(run, a, world.StepStatusCompensating, 1, "a after a refused append")
	f.wantCounts(run, nil, world.Compensations{Running: 1, Succeeded: 1, Failed: 1}, "after a refused append")
	f.mustAppend(run, ev(a, &world.CompSucceeded{}), ev("", &world.RunDeactivated{}))
	f.wantCounts(run, nil, world.Compensations{Succeeded: 2, Failed: 1}, "the end")
}

func testCompSecondSucceeded(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.compensableStep(run)
	f.mustAppend(run, ev(step, &world.CompStarted{}))
	f.mustAppend(run, ev(step, &world.CompSucceeded{}))
	before := f.events(run)
	for _, d := range []world.EventData{&world.CompSucceeded{}, &world.CompFailed{Error: stepError("x")}, &world.CompStarted{}, &world.CompRetryScheduled{Error: stepError("x")}} {
		_, err := f.append(run, ev(step, d))
		wantErr(t, err, world.ErrConflict, "%s after comp_succeeded", typeOf(d))
	}
	f.wantLogUnchanged(run, before, "a second outcome of a compensation")
	f.wantCounts(run, nil, world.Compensations{Succeeded: 1}, "after a refused second comp_succeeded")
	f.wantComp(run, step, world.StepStatusCompensated, 1, "after a refused second comp_succeeded")
}

// typeOf names a payload's event type.
func typeOf(d world.EventData) world.EventType { return world.EventInput{Data: d}.Type() }
