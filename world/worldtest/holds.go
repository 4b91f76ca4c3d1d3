package worldtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// holdCases: a run_held holds a run without ending it; the World stores the
// hold with the run (read back by GetRun and ListRuns, the status filter
// included) until run_started releases it or a terminal event ends the run.
func holdCases() []testCase {
	return []testCase{
		{"hold_stored_and_released", testHoldStoredAndReleased},
		{"held_run_accepts_work", testHeldRunAcceptsWork},
		{"held_run_can_end", testHeldRunCanEnd},
		{"hold_finished_gone", testHoldFinishedGone},
	}
}

func held(attempt int, retryAt time.Time) *world.RunHeld {
	return &world.RunHeld{
		Error:     &world.ErrorData{Type: "ReplayDivergenceError", Message: "diverged at event 3"},
		ErrorCode: world.CodeReplayDivergence, Attempt: attempt, RetryAt: retryAt,
	}
}

// wantHold checks a run read back from the World against the hold it should
// carry.
func (f *fixture) wantHold(r *world.Run, attempt int, since, retryAt time.Time, what string) {
	f.t.Helper()
	h := r.Hold
	switch {
	case r.Status != world.RunStatusHeld || h == nil:
		f.t.Fatalf("%s: status %q hold %+v, want held with a hold", what, r.Status, h)
	case h.ErrorCode != world.CodeReplayDivergence || h.Error == nil || h.Error.Message != "diverged at event 3" || h.Error.Type != "ReplayDivergenceError":
		f.t.Fatalf("%s: hold %q %+v, want the divergence recorded", what, h.ErrorCode, h.Error)
	case h.Attempt != attempt || !sameTime(h.RetryAt, retryAt):
		f.t.Fatalf("%s: hold attempt %d retry at %v, want %d at %v", what, h.Attempt, h.RetryAt, attempt, retryAt)
	case h.Since.Before(since.Add(-skew)) || h.Since.After(since.Add(skew)):
		f.t.Fatalf("%s: held since %v, want about %v", what, h.Since, since)
	}
}

// heldSince checks that a run held by a commit made after before was held
// at about the commit's time (between before and now, on the World's
// clock, however long the commit took) and returns that time.
func (f *fixture) heldSince(r *world.Run, before time.Time, what string) time.Time {
	f.t.Helper()
	if r == nil || r.Hold == nil {
		f.t.Fatalf("%s: run %+v, want a hold", what, r)
	}
	if s := r.Hold.Since; s.Before(before.Add(-skew)) || s.After(f.now().Add(skew)) {
		f.t.Fatalf("%s: held since %v, want between %v and now", what, s, before)
	}
	return r.Hold.Since
}

// listed returns the run from ListRuns filtered by status, nil when absent.
func (f *fixture) listed(runID string, status world.RunStatus) *world.Run {
	f.t.Helper()
	p, err := f.w.ListRuns(f.ctx, &world.ListRunsParams{Status: status, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		f.t.Fatalf("ListRuns(status %s): %v", status, err)
	}
	for i := range p.Items {
		if p.Items[i].RunID == runID {
			return &p.Items[i]
		}
	}
	return nil
}

func testHoldStoredAndReleased(t *testing.T, f *fixture) {
	id := f.startedRun()
	started := f.getRun(id).StartedAt
	before := f.now()
	retry1 := before.Add(time.Minute).Truncate(time.Millisecond)
	res := f.mustAppend(id, ev("", held(1, retry1)))
	first := f.heldSince(res.Run, before, "Append result after run_held")
	if e := res.Results[0].Event; e == nil || e.Type() != world.EventRunHeld || e.Seq != 3 {
		t.Fatalf("run_held: got event %s, want run_held with Seq 3", eventType(e))
	}
	f.wantHold(res.Run, 1, first, retry1, "Append result after run_held")
	f.wantHold(f.getRun(id), 1, first, retry1, "GetRun after run_held")
	if r := f.listed(id, world.RunStatusHeld); r == nil {
		t.Fatal("ListRuns(status held) misses the held run")
	} else {
		f.wantHold(r, 1, first, retry1, "ListRuns after run_held")
	}
	if f.listed(id, world.RunStatusRunning) != nil {
		t.Fatal("ListRuns(status running) lists the held run")
	}
	// Held again: the attempt and retry time move, Since stays.
	since := f.getRun(id).Hold.Since
	time.Sleep(10 * time.Millisecond)
	retry2 := time.Now().Add(2 * time.Minute).Truncate(time.Millisecond)
	f.mustAppend(id, ev("", held(2, retry2)))
	r := f.getRun(id)
	f.wantHold(r, 2, first, retry2, "GetRun after a second run_held")
	if !sameTime(r.Hold.Since, since) {
		t.Fatalf("a second run_held moved Since from %v to %v", since, r.Hold.Since)
	}
	// run_started releases it, with an event.
	res = f.mustAppend(id, ev("", &world.RunStarted{}))
	if e := res.Results[0].Event; e == nil || e.Type() != world.EventRunStarted {
		t.Fatalf("run_started on a held run: got event %s, want run_started", eventType(e))
	}
	r = f.getRun(id)
	if r.Status != world.RunStatusRunning || r.Hold != nil || !r.StartedAt.Equal(started) || r.LastSeq != 5 {
		t.Fatalf("GetRun after run_started on a held run: status %q hold %+v started %v LastSeq %d, want running, no hold, started %v, 5",
			r.Status, r.Hold, r.StartedAt, r.LastSeq, started)
	}
	if f.listed(id, world.RunStatusHeld) != nil || f.listed(id, world.RunStatusRunning) == nil {
		t.Fatal("ListRuns: the released run is still listed as held, or not as running")
	}
}

func testHeldRunAcceptsWork(t *testing.T, f *fixture) {
	id := f.startedRun()
	step := f.createStep(id)
	f.startStep(id, step, time.Minute)
	hook := f.mustCreateHook(id, token())
	retry := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	before := f.now()
	since := f.heldSince(f.mustAppend(id, ev("", held(1, retry))).Run, before, "Append result after run_held")
	// What was started before the hold still lands, and outsiders still
	// write: none of it releases the run.
	f.mustAppend(id, ev(step, &world.StepCompleted{Result: json.RawMessage(`7`)}))
	f.mustAppend(id, ev(hook, &world.HookReceived{Payload: json.RawMessage(`"p"`)}))
	wait := f.createWait(id, time.Now())
	f.mustAppend(id, ev(wait, &world.WaitCompleted{}))
	r := f.getRun(id)
	f.wantHold(r, 1, since, retry, "GetRun after work on a held run")
	if s := f.getStep(id, step); s.Status != world.StepStatusCompleted {
		t.Fatalf("step_completed on a held run: step %s", s.Status)
	}
}

func testHeldRunCanEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		tok := token()
		f.mustCreateHook(id, tok)
		f.mustAppend(id, ev("", held(1, time.Now().Add(time.Minute))))
		res := f.mustAppend(id, ev("", terminalData(how)))
		if e := res.Results[0].Event; e == nil || e.Type() != how {
			t.Fatalf("%s on a held run: got event %s", how, eventType(e))
		}
		r := f.getRun(id)
		if r.Status != terminalStatus(how) || r.Hold != nil || r.CompletedAt.IsZero() {
			t.Fatalf("%s on a held run: status %q hold %+v, want %q without a hold", how, r.Status, r.Hold, terminalStatus(how))
		}
		if how == world.EventRunFailed && (r.Error == nil || r.Error.Message != "boom") {
			t.Fatalf("run_failed on a held run: error %+v", r.Error)
		}
		if _, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok}); err == nil {
			t.Fatalf("%s on a held run left its hook active", how)
		}
	}
}

func testHoldFinishedGone(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		id := f.startedRun()
		f.endRun(id, how)
		before := f.events(id)
		_, err := f.append(id, ev("", held(1, time.Now())))
		wantErr(t, err, world.ErrGone, "run_held on a run ended by %s", how)
		f.wantLogUnchanged(id, before, "refused run_held")
		if r := f.getRun(id); r.Status != terminalStatus(how) || r.Hold != nil {
			t.Fatalf("refused run_held changed the run: status %q hold %+v", r.Status, r.Hold)
		}
	}
}
