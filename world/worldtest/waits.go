package worldtest

import (
	"fmt"
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

// A World shows a wait only through Append: wait_completed reads the stored
// wait (its result carries it, completed, with its ResumeAt and CreatedAt;
// its event the stored ResumeAt) and is refused 404 when the wait is absent
// (a run's end deletes its waits: Append judges them absent) and 409 when it
// is already completed.

// completeWait completes the waiting wait id of run and returns the wait as
// the commit read it from the store, completed.
func (f *fixture) completeWait(run, id string) *world.Wait {
	f.t.Helper()
	r := f.mustAppendOne(run, ev(id, &world.WaitCompleted{}))
	w := r.Wait
	if w == nil || w.WaitID != id || w.RunID != run || w.Status != world.WaitStatusCompleted || w.CompletedAt.IsZero() {
		f.t.Fatalf("wait_completed(%s, %s): result wait %+v", run, id, w)
	}
	if d, _ := r.Event.Data.(*world.WaitCompleted); d == nil || !sameTime(d.ResumeAt, w.ResumeAt) {
		f.t.Fatalf("wait_completed(%s, %s): payload %+v, want the wait's ResumeAt %v", run, id, r.Event.Data, w.ResumeAt)
	}
	return w
}

// wantWaitAbsent checks that run holds no wait id (never created, refused,
// or deleted by the run's end): a wait_completed naming it is refused 404
// and appends nothing.
func (f *fixture) wantWaitAbsent(run, id, format string, args ...any) {
	f.t.Helper()
	before := f.events(run)
	_, err := f.append(run, ev(id, &world.WaitCompleted{}))
	wantErr(f.t, err, world.ErrNotFound, format, args...)
	f.wantLogUnchanged(run, before, fmt.Sprintf(format, args...))
}

// wantWaitCompleted checks that the wait id of run is stored completed: a
// second wait_completed is refused 409.
func (f *fixture) wantWaitCompleted(run, id, format string, args ...any) {
	f.t.Helper()
	_, err := f.append(run, ev(id, &world.WaitCompleted{}))
	wantErr(f.t, err, world.ErrConflict, format, args...)
}

func testWaitCreate(t *testing.T, f *fixture) {
	run := f.startedRun()
	at := time.Now().Add(time.Hour)
	id := ids.New(world.PrefixWait)
	r := f.mustAppendOne(run, ev(id, &world.WaitCreated{ResumeAt: at}))
	if r.Event == nil || r.Event.Type() != world.EventWaitCreated || r.Wait == nil || r.Wait.Status != world.WaitStatusWaiting {
		t.Fatalf("wait_created: event %s, wait %+v", eventType(r.Event), r.Wait)
	}
	if r.Wait.WaitID != id || r.Wait.RunID != run || !sameTime(r.Wait.ResumeAt, at) || r.Wait.CreatedAt.IsZero() || !r.Wait.CompletedAt.IsZero() {
		t.Fatalf("wait_created: result wait %+v, want waiting until %v", r.Wait, at)
	}
	// The stored wait, as the commit completing it reads it.
	if w := f.completeWait(run, id); !sameTime(w.ResumeAt, at) || !sameTime(w.CreatedAt, r.Wait.CreatedAt) {
		t.Fatalf("the stored wait %+v, want the one created (resume at %v, created at %v)", w, at, r.Wait.CreatedAt)
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
	if w := f.completeWait(run, id); !sameTime(w.ResumeAt, at) {
		t.Fatalf("duplicate wait_created moved ResumeAt to %v", w.ResumeAt)
	}
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
		f.wantWaitAbsent(run, id, "wait_completed of a refused wait")
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
	if r.Wait.CompletedAt.IsZero() || !sameTime(r.Wait.ResumeAt, at) {
		t.Fatalf("wait_completed: result wait %+v, want completed, resuming at %v", r.Wait, at)
	}
	f.wantWaitCompleted(run, id, "wait_completed of a completed wait")
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
	f.completeWait(other, id) // still waiting: the refusal did not complete it
}

func testWaitRunEnd(t *testing.T, f *fixture) {
	for _, how := range terminalRunEvents {
		run := f.startedRun()
		waiting := f.createWait(run, time.Now().Add(time.Hour))
		done := f.createWait(run, time.Now())
		f.mustAppend(run, ev(done, &world.WaitCompleted{}))
		f.endRun(run, how)
		// Kept, the waiting wait would be refused 410 (its run ended), the
		// completed one 409.
		f.wantWaitAbsent(run, waiting, "wait_completed of a waiting wait of a run ended by %s", how)
		f.wantWaitAbsent(run, done, "wait_completed of a completed wait of a run ended by %s", how)
	}
}
