package worldtest

import (
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func waitCases() []testCase {
	return []testCase{
		{"create", testWaitCreate},
		{"create_duplicate_conflict", testWaitCreateDuplicate},
		{"create_on_finished_run_conflict", testWaitCreateFinishedRun},
		{"create_invalid", testWaitCreateInvalid},
		{"complete", testWaitComplete},
		{"complete_twice_conflict", testWaitCompleteTwice},
		{"complete_missing_not_found", testWaitCompleteMissing},
		{"run_end_removes_waits", testWaitRunEnd},
	}
}

func (f *fixture) getWait(run, id string) *world.Wait {
	f.t.Helper()
	w, err := f.w.GetWait(f.ctx, &world.GetWaitParams{RunID: run, WaitID: id})
	if err != nil {
		f.t.Fatalf("GetWait(%s, %s): %v", run, id, err)
	}
	if w == nil || w.WaitID != id || w.RunID != run {
		f.t.Fatalf("GetWait(%s, %s): got %+v", run, id, w)
	}
	return w
}

func testWaitCreate(t *testing.T, f *fixture) {
	run := f.startedRun()
	at := time.Now().Add(time.Hour)
	id := ids.New(world.PrefixWait)
	r := f.mustAppendOne(run, ev(id, &world.WaitCreated{ResumeAt: at}))
	if r.Event == nil || r.Event.Type() != world.EventWaitCreated || r.Wait == nil || r.Wait.Status != world.WaitStatusWaiting {
		t.Fatalf("wait_created: event %s, wait %+v", eventType(r.Event), r.Wait)
	}
	w := f.getWait(run, id)
	if w.Status != world.WaitStatusWaiting || !sameTime(w.ResumeAt, at) || w.CreatedAt.IsZero() || !w.CompletedAt.IsZero() {
		t.Fatalf("GetWait after wait_created: %+v, want waiting until %v", w, at)
	}
}

func testWaitCreateDuplicate(t *testing.T, f *fixture) {
	run := f.startedRun()
	at := time.Now().Add(time.Hour)
	id := f.createWait(run, at)
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.WaitCreated{ResumeAt: at.Add(time.Hour)}))
	wantErr(t, err, world.ErrConflict, "duplicate wait_created")
	f.wantLogUnchanged(run, before, "duplicate wait_created")
	if w := f.getWait(run, id); !sameTime(w.ResumeAt, at) {
		t.Fatalf("duplicate wait_created moved ResumeAt to %v", w.ResumeAt)
	}
	f.mustAppend(run, ev(id, &world.WaitCompleted{}))
	_, err = f.append(run, ev(id, &world.WaitCreated{ResumeAt: at}))
	wantErr(t, err, world.ErrConflict, "wait_created for a completed wait")
}

func testWaitCreateFinishedRun(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		f.endRun(run, how)
		id := ids.New(world.PrefixWait)
		_, err := f.append(run, ev(id, &world.WaitCreated{ResumeAt: time.Now()}))
		wantErr(t, err, world.ErrConflict, "wait_created on a run ended by %s", how)
		_, err = f.w.GetWait(f.ctx, &world.GetWaitParams{RunID: run, WaitID: id})
		wantErr(t, err, world.ErrNotFound, "GetWait of a refused wait")
	}
}

func testWaitCreateInvalid(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, tc := range []struct {
		name string
		in   world.EventInput
	}{
		{"no resumeAt", ev(ids.New(world.PrefixWait), &world.WaitCreated{})},
		{"a step correlation ID", ev(ids.New(world.PrefixStep), &world.WaitCreated{ResumeAt: time.Now()})},
		{"no correlation ID", ev("", &world.WaitCompleted{})},
	} {
		_, err := f.append(run, tc.in)
		wantErr(t, err, world.ErrInvalid, "wait event with %s", tc.name)
	}
}

func testWaitComplete(t *testing.T, f *fixture) {
	run := f.startedRun()
	at := time.Now().Add(-time.Second)
	id := f.createWait(run, at)
	r := f.mustAppendOne(run, ev(id, &world.WaitCompleted{}))
	if r.Event == nil || r.Event.Type() != world.EventWaitCompleted {
		t.Fatalf("wait_completed: got %s", eventType(r.Event))
	}
	if d, _ := r.Event.Data.(*world.WaitCompleted); d == nil || !sameTime(d.ResumeAt, at) {
		t.Fatalf("wait_completed payload %+v, want the wait's ResumeAt %v", r.Event.Data, at)
	}
	if r.Wait == nil || r.Wait.Status != world.WaitStatusCompleted {
		t.Fatalf("wait_completed: result wait %+v", r.Wait)
	}
	if w := f.getWait(run, id); w.Status != world.WaitStatusCompleted || w.CompletedAt.IsZero() {
		t.Fatalf("GetWait after wait_completed: %+v", w)
	}
}

func testWaitCompleteTwice(t *testing.T, f *fixture) {
	run := f.startedRun()
	id := f.createWait(run, time.Now())
	f.mustAppend(run, ev(id, &world.WaitCompleted{}))
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.WaitCompleted{}))
	wantErr(t, err, world.ErrConflict, "second wait_completed")
	f.wantLogUnchanged(run, before, "second wait_completed")
}

func testWaitCompleteMissing(t *testing.T, f *fixture) {
	run := f.startedRun()
	_, err := f.append(run, ev(ids.New(world.PrefixWait), &world.WaitCompleted{}))
	wantErr(t, err, world.ErrNotFound, "wait_completed on a missing wait")
	other := f.startedRun()
	id := f.createWait(other, time.Now())
	_, err = f.append(run, ev(id, &world.WaitCompleted{}))
	wantErr(t, err, world.ErrNotFound, "wait_completed naming another run's wait")
	if w := f.getWait(other, id); w.Status != world.WaitStatusWaiting {
		t.Fatalf("a wait_completed on another run completed this wait")
	}
}

func testWaitRunEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		waiting := f.createWait(run, time.Now().Add(time.Hour))
		done := f.createWait(run, time.Now())
		f.mustAppend(run, ev(done, &world.WaitCompleted{}))
		f.endRun(run, how)
		for _, id := range []string{waiting, done} {
			_, err := f.w.GetWait(f.ctx, &world.GetWaitParams{RunID: run, WaitID: id})
			wantErr(t, err, world.ErrNotFound, "GetWait of a wait of a run ended by %s", how)
		}
		_, err := f.append(run, ev(waiting, &world.WaitCompleted{}))
		if !errors.Is(err, world.ErrNotFound) && !errors.Is(err, world.ErrGone) {
			t.Fatalf("wait_completed on a run ended by %s: %v, want 404 or 410", how, err)
		}
	}
}
