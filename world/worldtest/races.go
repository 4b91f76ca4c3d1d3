package worldtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func raceCases() []testCase {
	return []testCase{
		{"create_same_run", testRaceCreateRun},
		{"same_idempotency_key", testRaceIdempotencyKey},
		{"create_same_step", testRaceCreateStep},
		{"start_same_step", testRaceStartStep},
		{"complete_same_step", testRaceCompleteStep},
		{"claim_same_token", testRaceClaimToken},
		{"take_same_run_lease", testRaceRunLease},
		{"cancel_same_run", testRaceCancel},
		{"dense_seq_under_concurrent_appends", testRaceDenseSeq},
		{"hooks_against_run_end", testRaceHooksVsRunEnd},
	}
}

func testRaceCreateRun(t *testing.T, f *fixture) {
	run := ids.New(world.PrefixRun)
	errs := race(f.o.Racers, func(i int) error {
		_, err := f.append(run, ev("", &world.RunCreated{WorkflowName: fmt.Sprintf("racer-%d", i)}))
		return err
	})
	w := oneWinner(t, "concurrent run_created of one run ID", errs, isRefusal(world.ErrConflict, nil))
	if r := f.getRun(run); r.WorkflowName != fmt.Sprintf("racer-%d", w) {
		t.Fatalf("the run holds workflow %q, want the winner's racer-%d", r.WorkflowName, w)
	}
	if n := len(f.events(run)); n != 1 {
		t.Fatalf("after concurrent run_created the log has %d events, want 1", n)
	}
}

func testRaceIdempotencyKey(t *testing.T, f *fixture) {
	key := "race-" + ids.New("")
	runs := make([]string, f.o.Racers)
	for i := range runs {
		runs[i] = ids.New(world.PrefixRun)
	}
	errs := race(f.o.Racers, func(i int) error {
		_, err := f.append(runs[i], ev("", &world.RunCreated{WorkflowName: testWorkflow, IdempotencyKey: key}))
		return err
	})
	w := oneWinner(t, "concurrent run_created with one idempotency key", errs, isRefusal(world.ErrConflict, nil))
	for i, err := range errs {
		if i == w {
			continue
		}
		var e *world.RefusalError
		errors.As(err, &e)
		if e.Entity != runs[w] || e.Key == "" {
			t.Fatalf("loser %d: refusal %+v names run %s, want the winner %s and the key", i, e, e.Entity, runs[w])
		}
		_, err := f.w.GetRun(f.ctx, &world.GetRunParams{RunID: runs[i]})
		wantErr(t, err, world.ErrNotFound, "a losing run of the idempotency race")
	}
}

func testRaceCreateStep(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := ids.New(world.PrefixStep)
	errs := race(f.o.Racers, func(i int) error {
		_, err := f.append(run, ev(step, &world.StepCreated{StepName: fmt.Sprintf("racer-%d", i)}))
		return err
	})
	w := oneWinner(t, "concurrent step_created", errs, isErr(world.ErrConflict))
	if s := f.getStep(run, step); s.StepName != fmt.Sprintf("racer-%d", w) {
		t.Fatalf("the step holds name %q, want the winner's racer-%d", s.StepName, w)
	}
	if n := count(f.events(run), world.EventStepCreated, step); n != 1 {
		t.Fatalf("the log holds %d step_created, want 1", n)
	}
}

func testRaceStartStep(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.createStep(run)
	errs := race(f.o.Racers, func(int) error {
		_, err := f.append(run, ev(step, &world.StepStarted{LeaseTTL: time.Minute}))
		return err
	})
	oneWinner(t, "concurrent step_started of a pending step", errs, isRefusal(world.ErrConflict, func(e *world.RefusalError) bool { return e.Attempt > 0 }))
	if s := f.getStep(run, step); s.Attempt != 1 || s.Status != world.StepStatusRunning {
		t.Fatalf("after concurrent step_started the step is %q attempt %d, want running attempt 1", s.Status, s.Attempt)
	}
	if n := count(f.events(run), world.EventStepStarted, step); n != 1 {
		t.Fatalf("the log holds %d step_started, want 1", n)
	}
}

func testRaceCompleteStep(t *testing.T, f *fixture) {
	run := f.startedRun()
	step := f.createStep(run)
	f.startStep(run, step, time.Minute)
	errs := race(f.o.Racers, func(i int) error {
		var d world.EventData = &world.StepCompleted{Result: []byte(fmt.Sprint(i))}
		if i%2 == 1 {
			d = &world.StepFailed{Error: stepError(fmt.Sprint(i))}
		}
		_, err := f.append(run, ev(step, d))
		return err
	})
	oneWinner(t, "concurrent step_completed/step_failed", errs, isErr(world.ErrConflict))
	evs := f.events(run)
	if n := count(evs, world.EventStepCompleted, step) + count(evs, world.EventStepFailed, step); n != 1 {
		t.Fatalf("the log holds %d terminal step events, want 1", n)
	}
}

func testRaceClaimToken(t *testing.T, f *fixture) {
	tok := token()
	runs := make([]string, f.o.Racers)
	hooks := make([]string, f.o.Racers)
	for i := range runs {
		runs[i] = f.startedRun()
		hooks[i] = ids.New(world.PrefixHook)
	}
	results := make([]world.EventResult, f.o.Racers)
	errs := race(f.o.Racers, func(i int) error {
		res, err := f.append(runs[i], ev(hooks[i], &world.HookCreated{Token: tok}))
		if err == nil {
			results[i] = res.Results[0]
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: hook_created on a contended token failed: %v; want success (hook_created or hook_conflict)", i, err)
		}
	}
	winner := -1
	for i, r := range results {
		if r.Event != nil && r.Event.Type() == world.EventHookCreated {
			if winner >= 0 {
				t.Fatalf("runs %d and %d both got hook_created for one token", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no run got hook_created for the contended token")
	}
	for i, r := range results {
		if i == winner {
			continue
		}
		d, ok := r.Event.Data.(*world.HookConflict)
		if !ok || d.ConflictingRunID != runs[winner] {
			t.Fatalf("racer %d: got %s %+v, want hook_conflict naming the winner %s", i, eventType(r.Event), r.Event.Data, runs[winner])
		}
		if n := count(f.events(runs[i]), world.EventHookConflict, hooks[i]); n != 1 {
			t.Fatalf("racer %d's log holds %d hook_conflict, want 1", i, n)
		}
	}
	h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
	if err != nil || h.HookID != hooks[winner] {
		t.Fatalf("GetHookByToken after the race: %+v, %v; want the winner's hook %s", h, err, hooks[winner])
	}
	if n := len(f.listHooks("")); n != 1 {
		t.Fatalf("ListHooks after the race: %d active hooks, want 1", n)
	}
}

func testRaceRunLease(t *testing.T, f *fixture) {
	run := f.startedRun()
	errs := race(f.o.Racers, func(i int) error {
		_, err := f.w.AcquireRunLease(f.ctx, &world.RunLeaseParams{RunID: run, Owner: fmt.Sprintf("owner-%d", i), TTL: time.Minute})
		return err
	})
	w := oneWinner(t, "concurrent AcquireRunLease", errs, isRefusal(world.ErrLeaseHeld, nil))
	for i, err := range errs {
		var e *world.RefusalError
		if i != w && errors.As(err, &e) && e.Holder != fmt.Sprintf("owner-%d", w) {
			t.Fatalf("loser %d: refusal names holder %q, want the winner owner-%d", i, e.Holder, w)
		}
	}
}

func testRaceCancel(t *testing.T, f *fixture) {
	run := f.startedRun()
	errs := race(f.o.Racers, func(int) error {
		_, err := f.append(run, ev("", &world.RunCancelled{}))
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: concurrent run_cancelled failed: %v; every cancel of a cancellable run succeeds", i, err)
		}
	}
	if n := count(f.events(run), world.EventRunCancelled, ""); n != 1 {
		t.Fatalf("the log holds %d run_cancelled, want exactly 1", n)
	}
}

func testRaceDenseSeq(t *testing.T, f *fixture) {
	run := f.startedRun()
	const perRacer = 5
	seen := make([][]int64, f.o.Racers)
	errs := race(f.o.Racers, func(i int) error {
		for range perRacer {
			res, err := f.append(run, ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
			if err != nil {
				return err
			}
			seen[i] = append(seen[i], res.Results[0].Event.Seq)
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: unfenced append failed under contention: %v", i, err)
		}
	}
	var all []int64
	for _, s := range seen {
		all = append(all, s...)
	}
	slices.Sort(all)
	total := int64(2 + f.o.Racers*perRacer)
	if !slices.Equal(all, seqRange(3, total)) {
		t.Fatalf("the appends were given sequence numbers %v, want each of 3..%d exactly once", all, total)
	}
	evs := f.events(run) // checks density
	if int64(len(evs)) != total || f.getRun(run).LastSeq != total {
		t.Fatalf("the log holds %d events (LastSeq %d), want %d", len(evs), f.getRun(run).LastSeq, total)
	}
	corr := map[string]bool{}
	for _, e := range evs[2:] {
		if corr[e.CorrelationID] {
			t.Fatalf("wait %s appears twice in the log", e.CorrelationID)
		}
		corr[e.CorrelationID] = true
	}
}

func testRaceHooksVsRunEnd(t *testing.T, f *fixture) {
	run := f.startedRun()
	tokens := make([]string, f.o.Racers)
	for i := range tokens {
		tokens[i] = token()
	}
	errs := race(f.o.Racers+1, func(i int) error {
		if i == f.o.Racers {
			_, err := f.append(run, ev("", &world.RunCompleted{}))
			return err
		}
		_, err := f.append(run, ev(ids.New(world.PrefixHook), &world.HookCreated{Token: tokens[i]}))
		if errors.Is(err, world.ErrConflict) {
			return nil // created after the run ended: refused
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	if hs := f.listHooks(run); len(hs) != 0 {
		t.Fatalf("after the run ended, %d of its hooks are still active", len(hs))
	}
	other := f.startedRun()
	for _, tok := range tokens {
		f.mustCreateHook(other, tok)
	}
	evs := f.events(run)
	if last := evs[len(evs)-1]; last.Type() != world.EventRunCompleted {
		t.Fatalf("the run's log ends with %s after run_completed", last.Type())
	}
}
