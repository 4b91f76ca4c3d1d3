package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// restCases: a finished run's rest. The terminal event fixes the outcome;
// a step already running may still record its result (a late step_retrying
// is refused: no attempt starts after the end, and the writer records the
// attempt's failure instead),
// no step is created or started; a completed run's cleanup records one
// outcome (run_cleaned_up); run_deactivated comes once, after the end and
// the cleanup, and is stored with the run (DeactivatedAt).
func restCases() []testCase {
	return []testCase{
		{"deactivate_after_end", testDeactivateAfterEnd},
		{"deactivate_refused_before_end", testDeactivateBeforeEnd},
		{"deactivate_refused_twice", testDeactivateTwice},
		{"deactivate_race_one_winner", testDeactivateRace},
		{"running_step_records_after_end", testRunningStepAfterEnd},
		{"late_retry_refused_failure_recorded", testLateRetry},
		{"no_step_starts_after_end", testNoStepAfterEnd},
		{"cleanup_recorded_once", testCleanupOnce},
		{"cleanup_refused_without_hook", testCleanupWithoutHook},
		{"watch_sees_rest", testWatchSeesRest},
	}
}

func testDeactivateAfterEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		f.endRun(id, how)
		if r := f.getRun(id); r.Deactivated() {
			t.Fatalf("%s: run deactivated by its terminal event alone", how)
		}
		before := time.Now()
		res := f.mustAppend(id, ev("", &world.RunDeactivated{}))
		if e := res.Results[0].Event; e == nil || e.Type() != world.EventRunDeactivated || e.Seq != 4 {
			t.Fatalf("%s: run_deactivated appended as %s, want run_deactivated with Seq 4", how, eventType(e))
		}
		for what, r := range map[string]*world.Run{"Append result": res.Run, "GetRun": f.getRun(id), "ListRuns": f.listed(id, terminalStatus(how))} {
			switch {
			case r == nil:
				t.Fatalf("%s: %s misses the run", how, what)
			case r.Status != terminalStatus(how):
				t.Fatalf("%s: %s: status %s after run_deactivated, want %s", how, what, r.Status, terminalStatus(how))
			case !r.Deactivated() || r.DeactivatedAt.Before(before.Add(-skew)) || r.DeactivatedAt.After(time.Now().Add(skew)):
				t.Fatalf("%s: %s: DeactivatedAt %v, want about %v", how, what, r.DeactivatedAt, before)
			}
		}
	}
}

func testDeactivateBeforeEnd(t *testing.T, f *fixture) {
	pending := f.createRun("")
	running := f.startedRun()
	held := f.startedRun()
	f.mustAppend(held, ev("", heldData()))
	for _, id := range []string{pending, running, held} {
		before := f.events(id)
		_, err := f.append(id, ev("", &world.RunDeactivated{}))
		wantErr(t, err, world.ErrConflict, "run_deactivated on a %s run", f.getRun(id).Status)
		f.wantLogUnchanged(id, before, "refused run_deactivated")
		if f.getRun(id).Deactivated() {
			t.Fatal("a refused run_deactivated set DeactivatedAt")
		}
	}
}

func heldData() *world.RunHeld {
	return &world.RunHeld{Error: &world.ErrorData{Message: "diverged"}, ErrorCode: world.CodeReplayDivergence, Attempt: 1}
}

func testDeactivateTwice(t *testing.T, f *fixture) {
	id := f.startedRun()
	f.endRun(id, world.EventRunFailed)
	first := f.mustAppend(id, ev("", &world.RunDeactivated{})).Run.DeactivatedAt
	before := f.events(id)
	_, err := f.append(id, ev("", &world.RunDeactivated{}))
	wantErr(t, err, world.ErrConflict, "second run_deactivated")
	f.wantLogUnchanged(id, before, "second run_deactivated")
	if got := f.getRun(id).DeactivatedAt; !sameTime(got, first) {
		t.Fatalf("DeactivatedAt %v after a refused second run_deactivated, want the first's %v", got, first)
	}
}

func testDeactivateRace(t *testing.T, f *fixture) {
	id := f.startedRun()
	f.endRun(id, world.EventRunCompleted)
	errs := race(f.o.Racers, func(int) error {
		_, err := f.append(id, ev("", &world.RunDeactivated{}))
		return err
	})
	oneWinner(t, "concurrent run_deactivated", errs, isErr(world.ErrConflict))
	n := 0
	for _, e := range f.events(id) {
		if e.Type() == world.EventRunDeactivated {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the log holds %d run_deactivated after a race, want 1", n)
	}
}

func testRunningStepAfterEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		done, failed := f.createStep(id), f.createStep(id)
		f.startStep(id, done, time.Minute)
		f.startStep(id, failed, time.Minute)
		f.endRun(id, how)
		r := f.mustAppendOne(id, ev(done, &world.StepCompleted{Result: json.RawMessage(`7`)}))
		if r.Step == nil || r.Step.Status != world.StepStatusCompleted || string(r.Step.Output) != "7" {
			t.Fatalf("%s: step_completed of a running step after the end left %+v", how, r.Step)
		}
		r = f.mustAppendOne(id, ev(failed, &world.StepFailed{Error: stepError("late")}))
		if r.Step == nil || r.Step.Status != world.StepStatusFailed {
			t.Fatalf("%s: step_failed of a running step after the end left %+v", how, r.Step)
		}
		if st := f.getRun(id).Status; st != terminalStatus(how) {
			t.Fatalf("%s: run status %s after late step results, want %s", how, st, terminalStatus(how))
		}
		f.mustAppend(id, ev("", &world.RunDeactivated{}))
	}
}

func testLateRetry(t *testing.T, f *fixture) {
	id := f.startedRun()
	step := f.createStep(id)
	f.startStep(id, step, time.Minute)
	f.endRun(id, world.EventRunCompleted)
	before := f.events(id)
	_, err := f.append(id, ev(step, &world.StepRetrying{Error: stepError("try again"), RetryAfter: time.Now().Add(time.Minute)}))
	wantErr(t, err, world.ErrGone, "step_retrying of a running step after the end")
	f.wantLogUnchanged(id, before, "refused late step_retrying")
	f.mustAppend(id, ev(step, &world.StepFailed{Error: stepError("try again")}))
	st := f.getStep(id, step)
	if st.Status != world.StepStatusFailed || st.Error == nil || st.Error.Message != "try again" || !st.RetryAfter.IsZero() {
		t.Fatalf("step after a late step_retrying: %s error %+v retryAfter %v, want failed with the attempt's error and no retry", st.Status, st.Error, st.RetryAfter)
	}
}

func testNoStepAfterEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		pending := f.createStep(id)
		retrying := f.createStep(id)
		f.startStep(id, retrying, time.Minute)
		f.mustAppend(id, ev(retrying, &world.StepRetrying{Error: stepError("again")}))
		f.endRun(id, how)
		before := f.events(id)
		_, err := f.append(id, ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "late"}))
		wantErr(t, err, world.ErrConflict, "%s: step_created after the end", how)
		for _, s := range []string{pending, retrying} {
			_, err = f.append(id, ev(s, &world.StepStarted{}))
			wantErr(t, err, world.ErrGone, "%s: step_started after the end", how)
			_, err = f.append(id, ev(s, &world.StepRetrying{Error: stepError("x")}))
			wantErr(t, err, world.ErrGone, "%s: step_retrying of a pending step after the end", how)
		}
		f.wantLogUnchanged(id, before, "refused step events after the end")
	}
}

func testCleanupOnce(t *testing.T, f *fixture) {
	for _, failed := range []bool{false, true} {
		id := f.startedRun()
		res := f.mustAppend(id, ev("", &world.RunCompleted{Output: json.RawMessage(`1`), Cleanup: true}))
		if res.Run.Cleanup != world.CleanupPending || f.getRun(id).Cleanup != world.CleanupPending {
			t.Fatalf("cleanup %q after run_completed asked for one, want %q", f.getRun(id).Cleanup, world.CleanupPending)
		}
		_, err := f.append(id, ev("", &world.RunDeactivated{}))
		wantErr(t, err, world.ErrConflict, "run_deactivated before the cleanup's outcome")
		d, want := &world.RunCleanedUp{}, world.CleanupDone
		if failed {
			d, want = &world.RunCleanedUp{Error: &world.ErrorData{Type: "Panic", Message: "hook panicked"}}, world.CleanupFailed
		}
		f.mustAppend(id, ev("", d))
		if r := f.getRun(id); r.Cleanup != want || r.Status != world.RunStatusCompleted || string(r.Output) != "1" {
			t.Fatalf("after run_cleaned_up: status %s cleanup %q output %s, want completed, %q, 1", r.Status, r.Cleanup, r.Output, want)
		}
		before := f.events(id)
		_, err = f.append(id, ev("", &world.RunCleanedUp{}))
		wantErr(t, err, world.ErrConflict, "second run_cleaned_up")
		f.wantLogUnchanged(id, before, "second run_cleaned_up")
		if r := f.mustAppend(id, ev("", &world.RunDeactivated{})).Run; r.Cleanup != want || !r.Deactivated() {
			t.Fatalf("after run_deactivated: cleanup %q deactivated %v", r.Cleanup, r.Deactivated())
		}
	}
}

func testCleanupWithoutHook(t *testing.T, f *fixture) {
	running := f.startedRun()
	plain := f.startedRun()
	f.endRun(plain, world.EventRunCompleted)
	failed := f.startedRun()
	f.endRun(failed, world.EventRunFailed)
	for _, id := range []string{running, plain, failed} {
		_, err := f.append(id, ev("", &world.RunCleanedUp{}))
		wantErr(t, err, world.ErrConflict, "run_cleaned_up on a %s run with no cleanup pending", f.getRun(id).Status)
	}
}

// testWatchSeesRest: a run's watch delivers the run_deactivated committed
// with the run's end before it ends.
func testWatchSeesRest(t *testing.T, f *fixture) {
	run := f.startedRun()
	w := f.watch(world.WatchParams{RunID: run})
	w.take(2)
	f.mustAppend(run, ev("", terminalData(world.EventRunCompleted)), ev("", &world.RunDeactivated{}))
	got := w.take(2)
	if got[0].Event.Type() != world.EventRunCompleted || got[1].Event.Type() != world.EventRunDeactivated {
		t.Fatalf("after the end: %s, %s; want run_completed, run_deactivated", got[0].Event.Type(), got[1].Event.Type())
	}
	if err := w.wait(); err != nil {
		t.Fatalf("the watch ended with %v after the run's rest, want nil", err)
	}
}
