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

// compRun is a run in status st with the given compensation counts.
func compRun(st world.RunStatus, compensate bool, c world.Compensations) *world.Run {
	r := mkRun(st)
	r.Compensate, r.Compensations = compensate, c
	return r
}

// compensable is a step in status st that declared the compensation
// "refund", with the compensation's progress c (nil: untouched).
func compensable(st world.StepStatus, c *world.StepCompensation) *world.Step {
	s := mkStep(st, 1)
	if c == nil {
		c = &world.StepCompensation{}
	}
	c.Step = "refund"
	s.Compensation = c
	return s
}

// compensatingStep is a step whose compensation's attempt 1 runs under a
// lease until leaseUntil (zero: a retry scheduled at retryAt).
func compensatingStep(leaseUntil, retryAt time.Time) *world.Step {
	return compensable(world.StepStatusCompensating, &world.StepCompensation{Attempt: 1, StartedAt: created, LeaseExpiresAt: leaseUntil, RetryAfter: retryAt})
}

func wantStep(check func(s *world.Step, r *world.Run) bool, what string) func(*testing.T, world.Effect, error) {
	return func(t *testing.T, eff world.Effect, _ error) {
		t.Helper()
		if eff.Step == nil || eff.Step.Compensation == nil || !check(eff.Step, eff.Run) {
			t.Fatalf("effect step %+v (compensation %+v), run counts %+v: want %s", eff.Step, compOf(eff.Step), eff.Run.Compensations, what)
		}
	}
}

func compOf(s *world.Step) *world.StepCompensation {
	if s == nil {
		return nil
	}
	return s.Compensation
}

var compErr = &world.ErrorData{Message: "refund declined"}

// compEvents are one payload of each comp_* event.
func compEvents() []world.EventData {
	return []world.EventData{
		&world.CompStarted{}, &world.CompRetryScheduled{Error: compErr, RetryAfter: now.Add(time.Minute)},
		&world.CompSucceeded{}, &world.CompFailed{Error: compErr},
	}
}

// TestApplyCompRefusals: what every comp_* event refuses, and what only
// comp_started accepts.
func TestApplyCompRefusals(t *testing.T) {
	t.Parallel()
	live := mkRun(world.RunStatusRunning)
	var cases []applyCase
	for _, d := range compEvents() {
		name := string(typeOf(d))
		cases = append(cases,
			applyCase{name: name + " no step", state: world.State{Run: live}, corr: stepID, data: d, want: world.ErrNotFound, check: wantRefusal(world.ErrNotFound)},
			applyCase{name: name + " no run", corr: stepID, data: d, want: world.ErrNotFound},
			applyCase{name: name + " deactivated run", state: world.State{Run: deactivated(world.RunStatusFailed), Step: compensatingStep(now.Add(time.Minute), time.Time{})},
				corr: stepID, data: d, want: world.ErrGone, check: wantRefusal(world.ErrGone)},
			applyCase{name: name + " no compensation declared", state: world.State{Run: live, Step: mkStep(world.StepStatusCompleted, 1)},
				corr: stepID, data: d, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)},
			applyCase{name: name + " hook correlation", state: world.State{Run: live}, corr: hookID, data: d, want: world.ErrInvalid},
			applyCase{name: name + " no correlation", state: world.State{Run: live}, data: d, want: world.ErrInvalid},
		)
		for _, st := range []world.StepStatus{world.StepStatusPending, world.StepStatusRunning, world.StepStatusFailed, world.StepStatusCompensated, world.StepStatusCompensationFailed} {
			cases = append(cases, applyCase{name: name + " on " + string(st), state: world.State{Run: live, Step: compensable(st, nil)},
				corr: stepID, data: d, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)})
		}
		if typeOf(d) != world.EventCompStarted {
			cases = append(cases, applyCase{name: name + " on completed", state: world.State{Run: live, Step: compensable(world.StepStatusCompleted, nil)},
				corr: stepID, data: d, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)})
		}
	}
	cases = append(cases,
		applyCase{name: "comp_started negative lease", state: world.State{Run: live, Step: compensable(world.StepStatusCompleted, nil)},
			corr: stepID, data: &world.CompStarted{LeaseTTL: -time.Second}, want: world.ErrInvalid},
		applyCase{name: "comp_retry_scheduled without error", state: world.State{Run: live, Step: compensatingStep(now.Add(time.Minute), time.Time{})},
			corr: stepID, data: &world.CompRetryScheduled{}, want: world.ErrInvalid},
		applyCase{name: "comp_failed without error", state: world.State{Run: live, Step: compensatingStep(now.Add(time.Minute), time.Time{})},
			corr: stepID, data: &world.CompFailed{}, want: world.ErrInvalid},
		applyCase{name: "comp_started retry ahead", state: world.State{Run: live, Step: compensatingStep(time.Time{}, now.Add(time.Second))},
			corr: stepID, data: &world.CompStarted{}, want: world.ErrTooEarly,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Kind != world.ErrTooEarly || e.Entity != stepID || !e.Until.Equal(now.Add(time.Second)) {
					t.Fatalf("got %v, want a too-early refusal until %v", err, now.Add(time.Second))
				}
			}},
		applyCase{name: "comp_started lease live", state: world.State{Run: live, Step: compensatingStep(now.Add(time.Second), time.Time{})},
			corr: stepID, data: &world.CompStarted{}, want: world.ErrConflict,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Kind != world.ErrConflict || e.Entity != stepID || e.Attempt != 1 || !e.Until.Equal(now.Add(time.Second)) {
					t.Fatalf("got %v, want a refusal of attempt 1 leased until %v", err, now.Add(time.Second))
				}
			}},
	)
	// Step events on a step that completed and is (being) compensated: its
	// own outcome is recorded, nothing of the step itself applies again.
	for _, st := range []world.StepStatus{world.StepStatusCompensating, world.StepStatusCompensated, world.StepStatusCompensationFailed} {
		for _, d := range []world.EventData{&world.StepStarted{}, &world.StepCompleted{}, &world.StepFailed{Error: compErr}, &world.StepRetrying{Error: compErr}} {
			cases = append(cases, applyCase{name: string(typeOf(d)) + " on " + string(st), state: world.State{Run: live, Step: compensable(st, &world.StepCompensation{Attempt: 1})},
				corr: stepID, data: d, want: world.ErrConflict})
		}
	}
	runApplyCases(t, cases)
}

// TestApplyCompTransitions: completed -> compensating -> compensated |
// compensation_failed, with the run's counts, while the run is active and
// after its end.
func TestApplyCompTransitions(t *testing.T) {
	t.Parallel()
	var cases []applyCase
	for _, rs := range []world.RunStatus{world.RunStatusRunning, world.RunStatusPending, world.RunStatusHeld, world.RunStatusFailed, world.RunStatusCancelled, world.RunStatusCompleted} {
		owed := world.Compensations{Owed: 2, Succeeded: 1}
		running := world.Compensations{Owed: 1, Running: 1, Succeeded: 1}
		cases = append(cases,
			applyCase{name: "comp_started first " + string(rs), state: world.State{Run: compRun(rs, true, owed), Step: compensable(world.StepStatusCompleted, nil)},
				corr: stepID, data: &world.CompStarted{LeaseTTL: 30 * time.Second},
				check: func(t *testing.T, eff world.Effect, _ error) {
					s, c := eff.Step, eff.Step.Compensation
					if s.Status != world.StepStatusCompensating || c.Attempt != 1 || c.Interrupted != 0 || !c.StartedAt.Equal(now) ||
						!c.LeaseExpiresAt.Equal(now.Add(30*time.Second)) || !s.UpdatedAt.Equal(now) || c.Step != "refund" {
						t.Fatalf("comp_started: step %+v compensation %+v", s, c)
					}
					if got := eff.Run.Compensations; got != (world.Compensations{Owed: 1, Running: 1, Succeeded: 1}) || eff.Run.Status != rs {
						t.Fatalf("comp_started: run %s counts %+v, want owed 1 running 1 succeeded 1", eff.Run.Status, got)
					}
					d := eff.Event.Data.(*world.CompStarted)
					if *d != (world.CompStarted{StepName: "s", Compensation: "refund", Attempt: 1, LeaseTTL: 30 * time.Second, LeaseExpiresAt: now.Add(30 * time.Second)}) {
						t.Fatalf("comp_started: event payload %+v", d)
					}
					if eff.EndsRun || eff.Run.Deactivated() {
						t.Fatal("comp_started ended or deactivated the run")
					}
				}},
			applyCase{name: "comp_succeeded " + string(rs), state: world.State{Run: compRun(rs, true, running), Step: compensatingStep(now.Add(time.Minute), time.Time{})},
				corr: stepID, data: &world.CompSucceeded{},
				check: wantStep(func(s *world.Step, r *world.Run) bool {
					c := s.Compensation
					return s.Status == world.StepStatusCompensated && c.EndedAt.Equal(now) && c.LeaseExpiresAt.IsZero() && c.Error == nil &&
						r.Compensations == world.Compensations{Owed: 1, Succeeded: 2} && r.Status == rs
				}, "compensated, running 0, succeeded 2")},
			applyCase{name: "comp_failed " + string(rs), state: world.State{Run: compRun(rs, true, running), Step: compensatingStep(now.Add(time.Minute), time.Time{})},
				corr: stepID, data: &world.CompFailed{Error: compErr},
				check: wantStep(func(s *world.Step, r *world.Run) bool {
					c := s.Compensation
					return s.Status == world.StepStatusCompensationFailed && c.EndedAt.Equal(now) && c.Error == compErr &&
						r.Compensations == world.Compensations{Owed: 1, Succeeded: 1, Failed: 1}
				}, "compensation_failed, failed 1")},
		)
	}
	live := func(c world.Compensations) *world.Run { return compRun(world.RunStatusRunning, false, c) }
	one := world.Compensations{Running: 1}
	cases = append(cases,
		applyCase{name: "comp_started default lease", state: world.State{Run: live(world.Compensations{Owed: 1}), Step: compensable(world.StepStatusCompleted, nil)},
			corr: stepID, data: &world.CompStarted{},
			check: wantStep(func(s *world.Step, _ *world.Run) bool {
				return s.Compensation.LeaseExpiresAt.Equal(now.Add(world.DefaultStepLease))
			}, "the default lease")},
		applyCase{name: "comp_started takes over an expired lease", state: world.State{Run: live(one), Step: compensatingStep(now, time.Time{})},
			corr: stepID, data: &world.CompStarted{LeaseTTL: time.Minute},
			check: wantStep(func(s *world.Step, r *world.Run) bool {
				c := s.Compensation
				return c.Attempt == 2 && c.Interrupted == 1 && c.StartedAt.Equal(created) && c.LeaseExpiresAt.Equal(now.Add(time.Minute)) &&
					r.Compensations == one
			}, "attempt 2, interrupted 1, counts unchanged")},
		applyCase{name: "comp_started after a due retry", state: world.State{Run: live(one), Step: compensatingStep(time.Time{}, now)},
			corr: stepID, data: &world.CompStarted{},
			check: wantStep(func(s *world.Step, r *world.Run) bool {
				c := s.Compensation
				return c.Attempt == 2 && c.Interrupted == 0 && c.RetryAfter.IsZero() && r.Compensations == one
			}, "attempt 2, not interrupted, retry cleared")},
		applyCase{name: "comp_retry_scheduled", state: world.State{Run: live(one), Step: compensatingStep(now.Add(time.Minute), time.Time{})},
			corr: stepID, data: &world.CompRetryScheduled{Error: compErr, RetryAfter: now.Add(time.Hour)},
			check: wantStep(func(s *world.Step, r *world.Run) bool {
				c := s.Compensation
				return s.Status == world.StepStatusCompensating && c.Error == compErr && c.RetryAfter.Equal(now.Add(time.Hour)) &&
					c.LeaseExpiresAt.IsZero() && c.EndedAt.IsZero() && r.Compensations == one
			}, "compensating, retry at +1h, no lease, counts unchanged")},
		applyCase{name: "comp_succeeded after a retry clears the error", state: world.State{Run: live(one),
			Step: compensable(world.StepStatusCompensating, &world.StepCompensation{Attempt: 2, Error: compErr, LeaseExpiresAt: now.Add(time.Minute)})},
			corr: stepID, data: &world.CompSucceeded{},
			check: wantStep(func(s *world.Step, _ *world.Run) bool { return s.Compensation.Error == nil }, "no error")},
	)
	runApplyCases(t, cases)
}

// TestApplyCompRun: the events of the run and its steps that count
// compensations, and run_deactivated's refusals while any is pending.
func TestApplyCompRun(t *testing.T) {
	t.Parallel()
	counts := func(want world.Compensations, compensate bool) func(*testing.T, world.Effect, error) {
		return wantRun(func(r *world.Run) bool { return r.Compensations == want && r.Compensate == compensate }, "counts and compensate flag")
	}
	running := mkStep(world.StepStatusRunning, 1)
	cases := []applyCase{
		{name: "step_created with compensation", state: world.State{Run: mkRun(world.RunStatusRunning)}, corr: stepID,
			data: &world.StepCreated{StepName: "charge", Compensation: "refund"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if c := eff.Step.Compensation; c == nil || *c != (world.StepCompensation{Step: "refund"}) {
					t.Fatalf("step_created: compensation %+v, want refund untouched", c)
				}
			}},
		{name: "step_created without compensation", state: world.State{Run: mkRun(world.RunStatusRunning)}, corr: stepID,
			data: &world.StepCreated{StepName: "charge"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Step.Compensation != nil {
					t.Fatalf("step_created: compensation %+v, want none", eff.Step.Compensation)
				}
			}},
		{name: "step_created compensation too long", state: world.State{Run: mkRun(world.RunStatusRunning)}, corr: stepID,
			data: &world.StepCreated{StepName: "charge", Compensation: strings.Repeat("r", world.MaxNameLength+1)}, want: world.ErrInvalid},
		{name: "step_created compensation control character", state: world.State{Run: mkRun(world.RunStatusRunning)}, corr: stepID,
			data: &world.StepCreated{StepName: "charge", Compensation: "re\x00fund"}, want: world.ErrInvalid},
		{name: "step_completed owes its compensation", state: world.State{Run: compRun(world.RunStatusRunning, false, world.Compensations{Owed: 1}), Step: compensable(world.StepStatusRunning, nil)},
			corr: stepID, data: &world.StepCompleted{}, check: counts(world.Compensations{Owed: 2}, false)},
		{name: "step_completed after the end owes its compensation", state: world.State{Run: compRun(world.RunStatusFailed, true, world.Compensations{}), Step: compensable(world.StepStatusRunning, nil)},
			corr: stepID, data: &world.StepCompleted{}, check: counts(world.Compensations{Owed: 1}, true)},
		{name: "step_completed without compensation owes none", state: world.State{Run: mkRun(world.RunStatusRunning), Step: running},
			corr: stepID, data: &world.StepCompleted{}, check: counts(world.Compensations{}, false)},
		{name: "step_failed owes none", state: world.State{Run: mkRun(world.RunStatusRunning), Step: compensable(world.StepStatusRunning, nil)},
			corr: stepID, data: &world.StepFailed{Error: compErr}, check: counts(world.Compensations{}, false)},
		{name: "run_failed asks for compensation", state: world.State{Run: compRun(world.RunStatusRunning, false, world.Compensations{Owed: 3})},
			data: &world.RunFailed{Error: compErr, Compensate: true}, check: counts(world.Compensations{Owed: 3}, true)},
		{name: "run_failed without compensation", state: world.State{Run: mkRun(world.RunStatusRunning)},
			data: &world.RunFailed{Error: compErr}, check: counts(world.Compensations{}, false)},
		{name: "run_cancelled asks for compensation", state: world.State{Run: mkRun(world.RunStatusRunning)},
			data: &world.RunCancelled{Compensate: true}, check: counts(world.Compensations{}, true)},
		{name: "run_cancelled on a pending run asks for compensation", state: world.State{Run: mkRun(world.RunStatusPending)},
			data: &world.RunCancelled{Compensate: true}, check: counts(world.Compensations{}, true)},
	}
	for _, st := range terminalRuns {
		ask := st != world.RunStatusCompleted // run_completed has no way to ask
		cases = append(cases,
			applyCase{name: "deactivate refused while running " + string(st), state: world.State{Run: compRun(st, false, world.Compensations{Running: 1})},
				data: &world.RunDeactivated{}, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)},
			applyCase{name: "deactivate with owed but not asked " + string(st), state: world.State{Run: compRun(st, false, world.Compensations{Owed: 2, Succeeded: 1})},
				data: &world.RunDeactivated{}, check: wantRun(func(r *world.Run) bool { return r.Deactivated() }, "deactivated")},
			applyCase{name: "deactivate once all ended " + string(st), state: world.State{Run: compRun(st, ask, world.Compensations{Succeeded: 1, Failed: 1})},
				data: &world.RunDeactivated{}, check: wantRun(func(r *world.Run) bool { return r.Deactivated() }, "deactivated")},
		)
		if ask {
			cases = append(cases, applyCase{name: "deactivate refused while owed " + string(st), state: world.State{Run: compRun(st, true, world.Compensations{Owed: 1, Succeeded: 1})},
				data: &world.RunDeactivated{}, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)})
		}
	}
	runApplyCases(t, cases)
}

// TestFoldCompensation: a log with a saga's compensation folds to the state
// the events left, with the event payloads the World filled in.
func TestFoldCompensation(t *testing.T) {
	t.Parallel()
	at := now
	var evs []world.Event
	var s world.State
	add := func(corr string, d world.EventData) {
		t.Helper()
		ev := world.Event{RunID: runID, EventID: eventID, CorrelationID: corr, Data: d}
		e, err := world.Apply(s, ev, at)
		if err != nil {
			t.Fatalf("%s: %v", typeOf(d), err)
		}
		s.Run = e.Run
		if e.Step != nil {
			s.Step = e.Step
		}
		evs = append(evs, e.Event)
		at = at.Add(time.Second)
	}
	add("", &world.RunCreated{WorkflowName: "wf"})
	add("", &world.RunStarted{})
	add(stepID, &world.StepCreated{StepName: "charge", Compensation: "refund"})
	add(stepID, &world.StepStarted{})
	add(stepID, &world.StepCompleted{Result: json.RawMessage(`1`)})
	add("", &world.RunFailed{Error: compErr, Compensate: true})
	add(stepID, &world.CompStarted{LeaseTTL: time.Minute})
	add(stepID, &world.CompRetryScheduled{Error: compErr})
	add(stepID, &world.CompStarted{})
	add(stepID, &world.CompSucceeded{})
	add("", &world.RunDeactivated{})
	rs, err := world.FoldEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Run.Compensations != (world.Compensations{Succeeded: 1}) || !rs.Run.Compensate || !rs.Run.Deactivated() {
		t.Fatalf("folded run: compensate %v counts %+v deactivated %v", rs.Run.Compensate, rs.Run.Compensations, rs.Run.Deactivated())
	}
	st := rs.Steps[0]
	if c := st.Compensation; st.Status != world.StepStatusCompensated || c == nil || c.Attempt != 2 || c.Step != "refund" || c.Error != nil || c.EndedAt.IsZero() {
		t.Fatalf("folded step: %s compensation %+v", st.Status, c)
	}
	if d := evs[6].Data.(*world.CompStarted); d.Compensation != "refund" || d.Attempt != 1 || d.StepName != "charge" {
		t.Fatalf("recorded comp_started: %+v", d)
	}
}

func TestIsStepEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		t    world.EventType
		want bool
	}{
		{world.EventStepCreated, true}, {world.EventStepStarted, true}, {world.EventStepCompleted, true},
		{world.EventStepFailed, true}, {world.EventStepRetrying, true},
		{world.EventCompStarted, true}, {world.EventCompRetryScheduled, true}, {world.EventCompSucceeded, true}, {world.EventCompFailed, true},
		{world.EventRunCreated, false}, {world.EventRunDeactivated, false}, {world.EventHookCreated, false}, {world.EventWaitCreated, false},
		{world.EventAttributeSet, false},
	} {
		if got := world.IsStepEvent(tc.t); got != tc.want {
			t.Errorf("IsStepEvent(%s) = %v, want %v", tc.t, got, tc.want)
		}
	}
}

func TestCompEventsRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, d := range []world.EventData{
		&world.CompStarted{StepName: "s", Compensation: "refund", Attempt: 2, Interrupted: 1, LeaseTTL: time.Minute, LeaseExpiresAt: at},
		&world.CompRetryScheduled{StepName: "s", Error: compErr, RetryAfter: at},
		&world.CompSucceeded{StepName: "s"},
		&world.CompFailed{StepName: "s", Error: compErr},
		&world.StepCreated{StepName: "s", Compensation: "refund"},
		&world.RunFailed{Error: compErr, Compensate: true},
		&world.RunCancelled{Reason: "r", Compensate: true},
	} {
		in := world.Event{RunID: runID, EventID: eventID, CorrelationID: stepID, Seq: 3, CreatedAt: at, Data: d}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%s: Marshal: %v", typeOf(d), err)
		}
		var out world.Event
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: Unmarshal: %v", typeOf(d), err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("%s: round trip\n got %#v\nwant %#v", typeOf(d), out.Data, in.Data)
		}
		if got, err := world.NewEventData(typeOf(d)); err != nil || typeOf(got) != typeOf(d) {
			t.Fatalf("NewEventData(%s) = %v, %v", typeOf(d), got, err)
		}
	}
}
