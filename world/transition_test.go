package world_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

const (
	runID   = "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	otherID = "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAW"
	stepID  = "step_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	hookID  = "hook_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	waitID  = "wait_01ARZ3NDEKTSV4RRFFQ69G5FAV"
	eventID = "evnt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
)

var (
	now     = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	created = now.Add(-time.Hour)
)

func mkRun(status world.RunStatus) *world.Run {
	return &world.Run{RunID: runID, WorkflowName: "wf", Status: status, LastSeq: 4, CreatedAt: created, UpdatedAt: created}
}

func mkStep(status world.StepStatus, attempt int) *world.Step {
	s := &world.Step{RunID: runID, StepID: stepID, StepName: "s", Status: status, Attempt: attempt, CreatedAt: created, UpdatedAt: created}
	if status != world.StepStatusPending {
		s.StartedAt = created.Add(time.Minute)
	}
	return s
}

func withLease(s *world.Step, until time.Time) *world.Step { s.LeaseExpiresAt = until; return s }
func withRetry(s *world.Step, after time.Time) *world.Step { s.RetryAfter = after; return s }
func mkHook(run, token string) *world.Hook {
	return &world.Hook{RunID: run, HookID: hookID, Token: token, CreatedAt: created}
}
func mkWait(status world.WaitStatus, at time.Time) *world.Wait {
	return &world.Wait{RunID: runID, WaitID: waitID, Status: status, ResumeAt: at, CreatedAt: created}
}

var terminalRuns = []world.RunStatus{world.RunStatusCompleted, world.RunStatusFailed, world.RunStatusCancelled}

type applyCase struct {
	name  string
	state world.State
	corr  string
	data  world.EventData
	// want is the refusal's sentinel, nil for success.
	want error
	// check inspects the effect of a success, or the typed refusal.
	check func(t *testing.T, eff world.Effect, err error)
}

// cloneState deep-copies a State so Apply's purity can be checked.
func cloneState(s world.State) world.State {
	c := s
	if s.Run != nil {
		r := *s.Run
		c.Run = &r
	}
	if s.Step != nil {
		st := *s.Step
		if st.Compensation != nil {
			comp := *st.Compensation
			st.Compensation = &comp
		}
		c.Step = &st
	}
	if s.Hook != nil {
		h := *s.Hook
		c.Hook = &h
	}
	if s.Wait != nil {
		w := *s.Wait
		c.Wait = &w
	}
	if s.TokenHolder != nil {
		h := *s.TokenHolder
		c.TokenHolder = &h
	}
	return c
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := world.Event{RunID: runID, EventID: eventID, CorrelationID: tc.corr, Data: tc.data}
			before, evBefore := cloneState(tc.state), ev
			dataBefore := reflect.ValueOf(tc.data).Elem().Interface()
			eff, err := world.Apply(tc.state, ev, now)
			if !reflect.DeepEqual(tc.state, before) {
				t.Fatalf("Apply modified its State:\nbefore %+v\nafter  %+v", before, tc.state)
			}
			if !reflect.DeepEqual(ev, evBefore) || !reflect.DeepEqual(reflect.ValueOf(tc.data).Elem().Interface(), dataBefore) {
				t.Fatal("Apply modified its event")
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Apply: got %v, want %v", err, tc.want)
				}
				if !reflect.DeepEqual(eff, world.Effect{}) {
					t.Fatalf("Apply refused with a non-zero effect %+v", eff)
				}
			} else {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				checkEffect(t, tc, eff)
			}
			if tc.check != nil {
				tc.check(t, eff, err)
			}
		})
	}
}

// checkEffect checks what every successful, non-skipped effect must hold.
func checkEffect(t *testing.T, tc applyCase, eff world.Effect) {
	t.Helper()
	if eff.Skip {
		if eff.Run == nil || !reflect.DeepEqual(*eff.Run, *tc.state.Run) || eff.Event.Data != nil {
			t.Fatalf("a skipped effect must carry the unchanged run and no event: %+v", eff)
		}
		return
	}
	wantSeq := int64(1)
	if tc.state.Run != nil {
		wantSeq = tc.state.Run.LastSeq + 1
	}
	e := eff.Event
	if e.Seq != wantSeq || !e.CreatedAt.Equal(now) || e.RunID != runID || e.EventID != eventID || e.CorrelationID != tc.corr {
		t.Fatalf("effect event %+v, want Seq %d at %v with the proposed IDs", e, wantSeq, now)
	}
	if eff.Run == nil || eff.Run.LastSeq != wantSeq || !eff.Run.UpdatedAt.Equal(now) {
		t.Fatalf("effect run %+v, want LastSeq %d updated at %v", eff.Run, wantSeq, now)
	}
}

func wantRefusal(kind error) func(*testing.T, world.Effect, error) {
	return func(t *testing.T, _ world.Effect, err error) {
		var r *world.RefusalError
		if !errors.As(err, &r) || r.Kind != kind {
			t.Fatalf("got %T %v, want a *RefusalError of kind %v", err, err, kind)
		}
	}
}

func mkHeld(attempt int) *world.RunHeld {
	return &world.RunHeld{Error: &world.ErrorData{Message: "diverged"}, ErrorCode: world.CodeReplayDivergence, Attempt: attempt, RetryAt: now.Add(time.Minute)}
}

// heldRun is a run held since an hour ago, at its first attempt.
func heldRun() *world.Run {
	r := mkRun(world.RunStatusHeld)
	r.StartedAt = created
	r.Hold = &world.RunHold{ErrorCode: world.CodeReplayDivergence, Error: &world.ErrorData{Message: "old"}, Attempt: 1, Since: created, RetryAt: created.Add(time.Minute)}
	return r
}

// heldRunCases: run_held holds a live run without ending it; run_started
// releases it; a terminal event ends it and clears the hold.
func heldRunCases() []applyCase {
	cases := []applyCase{
		{name: "run_held running", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: mkHeld(1),
			check: func(t *testing.T, eff world.Effect, _ error) {
				h := eff.Run.Hold
				if eff.Run.Status != world.RunStatusHeld || eff.EndsRun || h == nil || h.ErrorCode != world.CodeReplayDivergence ||
					h.Error.Message != "diverged" || h.Attempt != 1 || !h.Since.Equal(now) || !h.RetryAt.Equal(now.Add(time.Minute)) {
					t.Fatalf("run_held: %+v hold %+v", eff, h)
				}
			}},
		{name: "run_held held keeps since", state: world.State{Run: heldRun()}, data: mkHeld(2),
			check: func(t *testing.T, eff world.Effect, _ error) {
				h := eff.Run.Hold
				if eff.Run.Status != world.RunStatusHeld || h.Attempt != 2 || !h.Since.Equal(created) || h.Error.Message != "diverged" {
					t.Fatalf("run_held again: hold %+v", h)
				}
			}},
		{name: "run_held pending", state: world.State{Run: mkRun(world.RunStatusPending)}, data: mkHeld(1),
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusHeld || eff.Run.Hold == nil {
					t.Fatalf("run_held on a pending run: %+v", eff.Run)
				}
			}},
		{name: "run_started held releases", state: world.State{Run: heldRun()}, data: &world.RunStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Skip || eff.Run.Status != world.RunStatusRunning || eff.Run.Hold != nil || !eff.Run.StartedAt.Equal(created) {
					t.Fatalf("run_started on a held run: %+v", eff)
				}
			}},
		{name: "run_held invalid", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: &world.RunHeld{ErrorCode: "C"}, want: world.ErrInvalid},
	}
	for _, d := range []world.EventData{&world.RunCompleted{}, &world.RunFailed{Error: &world.ErrorData{Message: "m"}, ErrorCode: "C"}, &world.RunCancelled{}} {
		cases = append(cases, applyCase{name: string(typeOf(d)) + " held", state: world.State{Run: heldRun()}, data: d,
			check: func(t *testing.T, eff world.Effect, _ error) {
				if !eff.EndsRun || !eff.Run.Status.Terminal() || eff.Run.Hold != nil {
					t.Fatalf("%s on a held run: %+v", typeOf(d), eff.Run)
				}
			}})
	}
	held := world.State{Run: heldRun(), Step: mkStep(world.StepStatusRunning, 1)}
	cases = append(cases,
		applyCase{name: "step_completed held run", state: held, corr: stepID, data: &world.StepCompleted{Result: json.RawMessage(`1`)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusHeld || eff.Run.Hold == nil || eff.Step.Status != world.StepStatusCompleted {
					t.Fatalf("step_completed on a held run: run %+v step %+v", eff.Run, eff.Step)
				}
			}},
	)
	return cases
}

func TestApplyRun(t *testing.T) {
	t.Parallel()
	cases := []applyCase{
		{name: "run_created", data: &world.RunCreated{WorkflowName: "wf", DeploymentID: "d", Input: json.RawMessage(`1`), IdempotencyKey: "k", Attributes: map[string]string{"a": "b"}, Version: "v7"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				r := eff.Run
				if r.Status != world.RunStatusPending || r.WorkflowName != "wf" || r.DeploymentID != "d" || string(r.Input) != "1" || r.Version != "v7" ||
					r.IdempotencyKey != "k" || r.Attributes["a"] != "b" || !r.CreatedAt.Equal(now) || eff.EndsRun {
					t.Fatalf("run_created: run %+v", r)
				}
			}},
		{name: "run_created key-less ignores idempotency holder", state: world.State{IdempotencyRunID: otherID}, data: &world.RunCreated{WorkflowName: "wf"}},
		{name: "run_created existing", state: world.State{Run: mkRun(world.RunStatusPending)}, data: &world.RunCreated{WorkflowName: "wf"}, want: world.ErrConflict,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Entity != runID || e.Key != "" {
					t.Fatalf("got %v, want a refusal naming run %s", err, runID)
				}
			}},
		{name: "run_created idempotency key taken", state: world.State{IdempotencyRunID: otherID}, data: &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "k"}, want: world.ErrConflict,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Entity != otherID || e.Key != "k" {
					t.Fatalf("got %v, want a refusal naming %s and key k", err, otherID)
				}
			}},
		{name: "run_created invalid", data: &world.RunCreated{}, want: world.ErrInvalid, check: wantRefusal(world.ErrInvalid)},
		{name: "run_started pending", state: world.State{Run: mkRun(world.RunStatusPending)}, data: &world.RunStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusRunning || !eff.Run.StartedAt.Equal(now) {
					t.Fatalf("run_started: run %+v", eff.Run)
				}
			}},
		{name: "run_started running skips", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: &world.RunStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if !eff.Skip {
					t.Fatal("run_started on a running run: want Skip")
				}
			}},
		{name: "run_started missing", data: &world.RunStarted{}, want: world.ErrNotFound, check: wantRefusal(world.ErrNotFound)},
		{name: "run_cancelled pending", state: world.State{Run: mkRun(world.RunStatusPending)}, data: &world.RunCancelled{Reason: "r"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusCancelled || eff.Run.CancelReason != "r" || !eff.EndsRun || !eff.Run.CompletedAt.Equal(now) {
					t.Fatalf("run_cancelled: %+v", eff)
				}
			}},
		{name: "run_cancelled cancelled skips", state: world.State{Run: mkRun(world.RunStatusCancelled)}, data: &world.RunCancelled{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if !eff.Skip || eff.EndsRun {
					t.Fatalf("repeated run_cancelled: %+v, want Skip without EndsRun", eff)
				}
			}},
		{name: "run_completed running", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: &world.RunCompleted{Output: json.RawMessage(`"o"`)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusCompleted || string(eff.Run.Output) != `"o"` || !eff.EndsRun || !eff.Run.CompletedAt.Equal(now) {
					t.Fatalf("run_completed: %+v", eff)
				}
			}},
		{name: "run_failed pending", state: world.State{Run: mkRun(world.RunStatusPending)}, data: &world.RunFailed{Error: &world.ErrorData{Message: "m"}, ErrorCode: "C"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Run.Status != world.RunStatusFailed || eff.Run.Error.Message != "m" || eff.Run.ErrorCode != "C" || !eff.EndsRun {
					t.Fatalf("run_failed: %+v", eff)
				}
			}},
	}
	cases = append(cases, heldRunCases()...)
	for _, st := range terminalRuns {
		cases = append(cases,
			applyCase{name: "run_held " + string(st), state: world.State{Run: mkRun(st)}, data: mkHeld(1), want: world.ErrGone, check: wantRefusal(world.ErrGone)},
			applyCase{name: "run_started " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunStarted{}, want: world.ErrGone, check: wantRefusal(world.ErrGone)},
			applyCase{name: "run_completed " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunCompleted{}, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)},
			applyCase{name: "run_failed " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunFailed{Error: &world.ErrorData{}}, want: world.ErrConflict},
		)
		if st != world.RunStatusCancelled {
			cases = append(cases, applyCase{name: "run_cancelled " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunCancelled{}, want: world.ErrConflict})
		}
	}
	for _, d := range []world.EventData{&world.RunCompleted{}, &world.RunFailed{Error: &world.ErrorData{}}, &world.RunCancelled{}} {
		cases = append(cases, applyCase{name: string(typeOf(d)) + " missing", data: d, want: world.ErrNotFound})
	}
	runApplyCases(t, cases)
}

func TestApplyStep(t *testing.T) {
	t.Parallel()
	running := world.State{Run: mkRun(world.RunStatusRunning)}
	with := func(r world.RunStatus, s *world.Step) world.State {
		return world.State{Run: mkRun(r), Step: s}
	}
	live := world.RunStatusRunning
	cases := []applyCase{
		{name: "step_created", state: running, corr: stepID, data: &world.StepCreated{StepName: "n", Input: json.RawMessage(`[1]`)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				s := eff.Step
				if s == nil || s.StepID != stepID || s.RunID != runID || s.Status != world.StepStatusPending || s.StepName != "n" || string(s.Input) != "[1]" || s.Attempt != 0 || !s.CreatedAt.Equal(now) {
					t.Fatalf("step_created: step %+v", s)
				}
			}},
		{name: "step_created duplicate", state: with(live, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepCreated{StepName: "n"}, want: world.ErrConflict},
		{name: "step_created missing run", corr: stepID, data: &world.StepCreated{StepName: "n"}, want: world.ErrNotFound},
		{name: "step_created invalid", state: running, corr: stepID, data: &world.StepCreated{}, want: world.ErrInvalid},
		{name: "step_started pending", state: with(live, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepStarted{LeaseTTL: time.Minute},
			check: func(t *testing.T, eff world.Effect, _ error) {
				s := eff.Step
				if s.Status != world.StepStatusRunning || s.Attempt != 1 || !s.LeaseExpiresAt.Equal(now.Add(time.Minute)) || !s.StartedAt.Equal(now) || !s.UpdatedAt.Equal(now) {
					t.Fatalf("step_started: step %+v", s)
				}
				d := eff.Event.Data.(*world.StepStarted)
				if d.Attempt != 1 || d.LeaseTTL != time.Minute || !d.LeaseExpiresAt.Equal(s.LeaseExpiresAt) || d.StepName != "s" {
					t.Fatalf("step_started: event payload %+v", d)
				}
			}},
		{name: "step_started default lease", state: with(live, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if !eff.Step.LeaseExpiresAt.Equal(now.Add(world.DefaultStepLease)) || eff.Event.Data.(*world.StepStarted).LeaseTTL != world.DefaultStepLease {
					t.Fatalf("step_started without a lease: %+v", eff.Step)
				}
			}},
		{name: "step_started keeps first StartedAt", state: with(live, withLease(mkStep(world.StepStatusRunning, 2), now.Add(-time.Second))), corr: stepID, data: &world.StepStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Step.Attempt != 3 || !eff.Step.StartedAt.Equal(created.Add(time.Minute)) {
					t.Fatalf("restart after lease expiry: attempt %d StartedAt %v", eff.Step.Attempt, eff.Step.StartedAt)
				}
			}},
		{name: "step_started lease expiring now", state: with(live, withLease(mkStep(world.StepStatusRunning, 1), now)), corr: stepID, data: &world.StepStarted{}},
		{name: "step_started leased", state: with(live, withLease(mkStep(world.StepStatusRunning, 1), now.Add(time.Nanosecond))), corr: stepID, data: &world.StepStarted{}, want: world.ErrConflict,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Entity != stepID || e.Attempt != 1 || !e.Until.Equal(now.Add(time.Nanosecond)) {
					t.Fatalf("got %v, want a refusal of attempt 1 leased", err)
				}
			}},
		{name: "step_started too early", state: with(live, withRetry(mkStep(world.StepStatusPending, 1), now.Add(time.Second))), corr: stepID, data: &world.StepStarted{}, want: world.ErrTooEarly,
			check: func(t *testing.T, _ world.Effect, err error) {
				var e *world.RefusalError
				if !errors.As(err, &e) || e.Entity != stepID || !e.Until.Equal(now.Add(time.Second)) {
					t.Fatalf("got %v, want a too-early refusal", err)
				}
			}},
		{name: "step_started at retry time", state: with(live, withRetry(mkStep(world.StepStatusPending, 1), now)), corr: stepID, data: &world.StepStarted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if !eff.Step.RetryAfter.IsZero() || eff.Step.Attempt != 2 {
					t.Fatalf("step_started at its retry time: %+v", eff.Step)
				}
			}},
		{name: "step_started missing", state: running, corr: stepID, data: &world.StepStarted{}, want: world.ErrNotFound},
		{name: "step_started negative lease", state: with(live, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepStarted{LeaseTTL: -1}, want: world.ErrInvalid},
		{name: "step_completed running", state: with(live, withLease(mkStep(world.StepStatusRunning, 1), now.Add(time.Hour))), corr: stepID, data: &world.StepCompleted{Result: json.RawMessage(`7`)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				s := eff.Step
				if s.Status != world.StepStatusCompleted || string(s.Output) != "7" || !s.CompletedAt.Equal(now) || !s.LeaseExpiresAt.IsZero() || eff.EndsRun {
					t.Fatalf("step_completed: %+v", s)
				}
			}},
		{name: "step_completed pending", state: with(live, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepCompleted{}},
		{name: "step_failed running", state: with(live, mkStep(world.StepStatusRunning, 1)), corr: stepID, data: &world.StepFailed{Error: &world.ErrorData{Message: "x"}},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Step.Status != world.StepStatusFailed || eff.Step.Error.Message != "x" {
					t.Fatalf("step_failed: %+v", eff.Step)
				}
			}},
		{name: "step_completed missing", state: running, corr: stepID, data: &world.StepCompleted{}, want: world.ErrNotFound},
		{name: "step_retrying running", state: with(live, withLease(mkStep(world.StepStatusRunning, 1), now.Add(time.Hour))), corr: stepID, data: &world.StepRetrying{Error: &world.ErrorData{Message: "r"}, RetryAfter: now.Add(time.Minute)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				s := eff.Step
				if s.Status != world.StepStatusPending || s.Error.Message != "r" || !s.RetryAfter.Equal(now.Add(time.Minute)) || !s.LeaseExpiresAt.IsZero() || s.Attempt != 1 {
					t.Fatalf("step_retrying: %+v", s)
				}
			}},
		{name: "step_retrying missing", state: running, corr: stepID, data: &world.StepRetrying{Error: &world.ErrorData{}}, want: world.ErrNotFound},
	}
	for _, done := range []world.StepStatus{world.StepStatusCompleted, world.StepStatusFailed} {
		for _, d := range []world.EventData{&world.StepStarted{}, &world.StepCompleted{}, &world.StepFailed{Error: &world.ErrorData{}}, &world.StepRetrying{Error: &world.ErrorData{}}} {
			cases = append(cases, applyCase{name: string(typeOf(d)) + " on " + string(done), state: with(live, mkStep(done, 1)), corr: stepID, data: d, want: world.ErrConflict, check: wantRefusal(world.ErrConflict)})
		}
	}
	for _, st := range terminalRuns {
		cases = append(cases,
			applyCase{name: "step_created on " + string(st), state: world.State{Run: mkRun(st)}, corr: stepID, data: &world.StepCreated{StepName: "n"}, want: world.ErrConflict},
			applyCase{name: "step_started pending on " + string(st), state: with(st, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepStarted{}, want: world.ErrGone},
			applyCase{name: "step_started expired on " + string(st), state: with(st, withLease(mkStep(world.StepStatusRunning, 1), now.Add(-time.Hour))), corr: stepID, data: &world.StepStarted{}, want: world.ErrGone},
			applyCase{name: "step_retrying on " + string(st), state: with(st, mkStep(world.StepStatusRunning, 1)), corr: stepID, data: &world.StepRetrying{Error: &world.ErrorData{}}, want: world.ErrGone},
			applyCase{name: "step_completed pending on " + string(st), state: with(st, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepCompleted{}, want: world.ErrGone, check: wantRefusal(world.ErrGone)},
			applyCase{name: "step_failed pending on " + string(st), state: with(st, mkStep(world.StepStatusPending, 0)), corr: stepID, data: &world.StepFailed{Error: &world.ErrorData{}}, want: world.ErrGone},
			applyCase{name: "step_completed running on " + string(st), state: with(st, mkStep(world.StepStatusRunning, 1)), corr: stepID, data: &world.StepCompleted{}},
			applyCase{name: "step_failed running on " + string(st), state: with(st, mkStep(world.StepStatusRunning, 1)), corr: stepID, data: &world.StepFailed{Error: &world.ErrorData{}}},
		)
	}
	runApplyCases(t, cases)
}

func TestApplyHookAndWait(t *testing.T) {
	t.Parallel()
	running := world.State{Run: mkRun(world.RunStatusRunning)}
	hooked := world.State{Run: mkRun(world.RunStatusRunning), Hook: mkHook(runID, "tok")}
	at := now.Add(time.Hour)
	cases := []applyCase{
		{name: "hook_created free token", state: running, corr: hookID, data: &world.HookCreated{Token: "tok", Metadata: json.RawMessage(`{}`), IsWebhook: true},
			check: func(t *testing.T, eff world.Effect, _ error) {
				h := eff.Hook
				if h == nil || h.HookID != hookID || h.RunID != runID || h.Token != "tok" || !h.IsWebhook || string(h.Metadata) != "{}" || !h.CreatedAt.Equal(now) || eff.Event.Type() != world.EventHookCreated {
					t.Fatalf("hook_created: %+v", eff)
				}
			}},
		{name: "hook_created token held", state: world.State{Run: mkRun(world.RunStatusRunning), TokenHolder: mkHook(otherID, "tok")}, corr: hookID, data: &world.HookCreated{Token: "tok"},
			check: func(t *testing.T, eff world.Effect, _ error) {
				d, ok := eff.Event.Data.(*world.HookConflict)
				if !ok || d.Token != "tok" || d.ConflictingRunID != otherID || eff.Hook != nil || eff.Event.CorrelationID != hookID {
					t.Fatalf("hook_created on a held token: %+v, want a hook_conflict naming %s and no hook", eff, otherID)
				}
			}},
		{name: "hook_created duplicate", state: hooked, corr: hookID, data: &world.HookCreated{Token: "tok"}, want: world.ErrConflict},
		{name: "hook_created missing run", corr: hookID, data: &world.HookCreated{Token: "tok"}, want: world.ErrNotFound},
		{name: "hook_conflict by a client", state: running, corr: hookID, data: &world.HookConflict{Token: "tok"}, want: world.ErrInvalid, check: wantRefusal(world.ErrInvalid)},
		{name: "hook_received", state: hooked, corr: hookID, data: &world.HookReceived{Payload: json.RawMessage(`5`)},
			check: func(t *testing.T, eff world.Effect, _ error) {
				d := eff.Event.Data.(*world.HookReceived)
				if d.Token != "tok" || string(d.Payload) != "5" || eff.DeleteHookID != "" {
					t.Fatalf("hook_received: %+v", eff)
				}
			}},
		{name: "hook_received by another token", state: hooked, corr: hookID, data: &world.HookReceived{Token: "other", Payload: json.RawMessage(`5`)}, want: world.ErrCorrupt},
		{name: "hook_received by its token", state: hooked, corr: hookID, data: &world.HookReceived{Token: "tok", Payload: json.RawMessage(`5`)}},
		{name: "hook_received missing", state: running, corr: hookID, data: &world.HookReceived{}, want: world.ErrNotFound},
		{name: "hook_disposed", state: hooked, corr: hookID, data: &world.HookDisposed{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.DeleteHookID != hookID || eff.Event.Data.(*world.HookDisposed).Token != "tok" {
					t.Fatalf("hook_disposed: %+v", eff)
				}
			}},
		{name: "hook_disposed missing", state: running, corr: hookID, data: &world.HookDisposed{}, want: world.ErrNotFound},
		{name: "wait_created", state: running, corr: waitID, data: &world.WaitCreated{ResumeAt: at},
			check: func(t *testing.T, eff world.Effect, _ error) {
				w := eff.Wait
				if w == nil || w.WaitID != waitID || w.Status != world.WaitStatusWaiting || !w.ResumeAt.Equal(at) || !w.CreatedAt.Equal(now) {
					t.Fatalf("wait_created: %+v", w)
				}
			}},
		{name: "wait_created duplicate", state: world.State{Run: mkRun(world.RunStatusRunning), Wait: mkWait(world.WaitStatusWaiting, at)}, corr: waitID, data: &world.WaitCreated{ResumeAt: at}, want: world.ErrConflict},
		{name: "wait_completed", state: world.State{Run: mkRun(world.RunStatusRunning), Wait: mkWait(world.WaitStatusWaiting, at)}, corr: waitID, data: &world.WaitCompleted{},
			check: func(t *testing.T, eff world.Effect, _ error) {
				if eff.Wait.Status != world.WaitStatusCompleted || !eff.Wait.CompletedAt.Equal(now) || !eff.Event.Data.(*world.WaitCompleted).ResumeAt.Equal(at) {
					t.Fatalf("wait_completed: %+v", eff)
				}
			}},
		{name: "wait_completed twice", state: world.State{Run: mkRun(world.RunStatusRunning), Wait: mkWait(world.WaitStatusCompleted, at)}, corr: waitID, data: &world.WaitCompleted{}, want: world.ErrConflict},
		{name: "wait_completed missing", state: running, corr: waitID, data: &world.WaitCompleted{}, want: world.ErrNotFound},
	}
	for _, st := range terminalRuns {
		cases = append(cases,
			applyCase{name: "hook_created on " + string(st), state: world.State{Run: mkRun(st)}, corr: hookID, data: &world.HookCreated{Token: "t"}, want: world.ErrConflict},
			applyCase{name: "hook_received on " + string(st), state: world.State{Run: mkRun(st), Hook: mkHook(runID, "t")}, corr: hookID, data: &world.HookReceived{}, want: world.ErrGone},
			applyCase{name: "wait_created on " + string(st), state: world.State{Run: mkRun(st)}, corr: waitID, data: &world.WaitCreated{ResumeAt: at}, want: world.ErrConflict},
			applyCase{name: "wait_completed on " + string(st), state: world.State{Run: mkRun(st), Wait: mkWait(world.WaitStatusWaiting, at)}, corr: waitID, data: &world.WaitCompleted{}, want: world.ErrGone},
		)
	}
	runApplyCases(t, cases)
}

func TestApplyInvalid(t *testing.T) {
	t.Parallel()
	s := world.State{Run: mkRun(world.RunStatusRunning)}
	for _, ev := range []world.Event{
		{RunID: runID},
		{RunID: "", Data: &world.RunStarted{}},
		{RunID: "wrun_x", Data: &world.RunStarted{}},
		{RunID: stepID, Data: &world.RunStarted{}},
		{RunID: runID, CorrelationID: stepID, Data: &world.RunStarted{}},
		{RunID: runID, CorrelationID: hookID, Data: &world.StepCreated{StepName: "n"}},
	} {
		if _, err := world.Apply(s, ev, now); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("Apply(%+v): %v, want ErrInvalid", ev, err)
		}
	}
}
