package worldtest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// byRun groups delivered events by run, checking that each run's come in
// sequence order and that no event comes twice.
func byRun(t *testing.T, got []world.WatchEvent) map[string][]world.Event {
	t.Helper()
	out := map[string][]world.Event{}
	for _, e := range got {
		prev := out[e.Event.RunID]
		if n := len(prev); n > 0 && prev[n-1].Seq >= e.Event.Seq {
			t.Fatalf("run %s: event %d (%s) after event %d: out of order or twice", e.Event.RunID, e.Event.Seq, e.Event.Type(), prev[n-1].Seq)
		}
		out[e.Event.RunID] = append(prev, e.Event)
	}
	return out
}

// wantRunEvents fails unless got holds exactly want for the run.
func wantRunEvents(t *testing.T, what string, got []world.Event, want []world.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].EventID != want[i].EventID {
			t.Fatalf("%s: event %d is seq %d, want seq %d", what, i, got[i].Seq, want[i].Seq)
		}
	}
}

func testWatchAllRuns(t *testing.T, f *fixture) {
	before := f.startedRun() // its first two events precede the watch
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{})
	if err != nil {
		t.Fatalf("WatchCursor: %v", err)
	}
	w := f.watch(world.WatchParams{After: c})
	a := f.startedRun()
	f.steps(before, 1)
	f.steps(a, 2)
	f.endRun(a, world.EventRunCompleted)
	got := byRun(t, w.take(2+6+1+3))
	wantRunEvents(t, "the run started before the cursor", got[before], f.events(before)[2:])
	wantRunEvents(t, "the run started after the cursor", got[a], f.events(a))
	w.quiet(f.d(100 * time.Millisecond))
}

// testWatchAllFromNow checks that an every-run watch from the present
// delivers nothing of runs that ended before it, however recent.
func testWatchAllFromNow(t *testing.T, f *fixture) {
	ended := f.startedRun()
	f.endRun(ended, world.EventRunCompleted)
	w := f.watch(world.WatchParams{}) // from the present
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{})
	if err != nil {
		t.Fatalf("WatchCursor: %v", err)
	}
	after := f.watch(world.WatchParams{After: c})
	// The first watch takes its position when its iteration starts, at a
	// moment the test cannot see: create runs until it delivers one. What
	// it delivers first is the run_created of one of them (one created
	// before it took its position is rightly skipped), never ended's log.
	var fresh []string
	deadline := time.Now().Add(w.timeout)
	for {
		fresh = append(fresh, f.createRun(""))
		e, ok := w.poll(f.d(250 * time.Millisecond))
		if !ok {
			if time.Now().After(deadline) {
				t.Fatalf("no event within %s of %d runs created after the watch began", w.timeout, len(fresh))
			}
			continue
		}
		if !slices.Contains(fresh, e.Event.RunID) || e.Event.Type() != world.EventRunCreated {
			t.Fatalf("got %s %d of %s, want run_created of a run created after the watch began (%v), not %s's log", e.Event.Type(), e.Event.Seq, e.Event.RunID, fresh, ended)
		}
		break
	}
	if e := after.next(); e.Event.RunID != fresh[0] || e.Event.Type() != world.EventRunCreated {
		t.Fatalf("got %s %d of %s, want run_created of the first run created after the cursor (%s), not %s's log", e.Event.Type(), e.Event.Seq, e.Event.RunID, fresh[0], ended)
	}
}

func testWatchAllResume(t *testing.T, f *fixture) {
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{})
	if err != nil {
		t.Fatalf("WatchCursor: %v", err)
	}
	a, b := f.startedRun(), f.startedRun()
	f.steps(a, 1)
	f.steps(b, 1)
	w := f.watch(world.WatchParams{After: c})
	first := w.take(5)
	if err := w.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped watch ended with %v", err)
	}
	f.endRun(a, world.EventRunCompleted)
	f.steps(b, 1)
	again := f.watch(world.WatchParams{After: first[4].Cursor})
	got := byRun(t, append(first, again.take(10+1+3-5)...))
	wantRunEvents(t, "run a", got[a], f.events(a))
	wantRunEvents(t, "run b", got[b], f.events(b))
	again.quiet(f.d(100 * time.Millisecond))
}

func testWatchAllTypes(t *testing.T, f *fixture) {
	// From a cursor of the present, not from an empty one: the position a
	// watch from the present takes is its own, at a moment the test cannot
	// see (testWatchAllFromNow).
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{})
	if err != nil {
		t.Fatalf("WatchCursor: %v", err)
	}
	w := f.watch(world.WatchParams{After: c, Types: []world.EventType{world.EventRunCreated, world.EventRunCompleted}})
	a := f.startedRun()
	f.steps(a, 1)
	f.endRun(a, world.EventRunCompleted)
	got := w.take(2)
	if got[0].Event.Type() != world.EventRunCreated || got[1].Event.Type() != world.EventRunCompleted || got[1].Event.RunID != a {
		t.Fatalf("got %s, %s; want run_created, run_completed of %s", got[0].Event.Type(), got[1].Event.Type(), a)
	}
	w.quiet(f.d(100 * time.Millisecond))
}

func testWatchCancel(t *testing.T, f *fixture) {
	run := f.startedRun()
	for _, p := range []world.WatchParams{{RunID: run}, {}} {
		w := f.watch(p)
		if p.RunID != "" {
			w.take(2)
		}
		time.Sleep(f.d(50 * time.Millisecond)) // waiting for a commit
		start := time.Now()
		err := w.stop()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled watch (run %q) ended with %v, want nil or context.Canceled", p.RunID, err)
		}
		if d := time.Since(start); d > f.d(10*time.Second) {
			t.Fatalf("a cancelled watch took %s to end", d)
		}
	}
}

// testWatchFold checks that the run's log folds (world.FoldEvents, what a
// subscription's snapshot is made of) into the state the World stores.
func testWatchFold(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.steps(run, 2)
	running := ids.New(world.PrefixStep)
	f.mustAppend(run, ev(running, &world.StepCreated{StepName: "s", Input: json.RawMessage(`3`)}), ev(running, &world.StepStarted{LeaseTTL: time.Minute}))
	hook := f.mustCreateHook(run, token())
	gone := f.mustCreateHook(run, token())
	f.mustAppend(run, ev(gone, &world.HookDisposed{}))
	wait := f.createWait(run, time.Now().Add(time.Hour))
	st, err := world.FoldEvents(f.events(run))
	if err != nil {
		t.Fatalf("FoldEvents: %v", err)
	}
	r := f.getRun(run)
	if st.Run.LastSeq != r.LastSeq || st.Run.Status != r.Status || !sameTime(st.Run.UpdatedAt, r.UpdatedAt) {
		t.Fatalf("folded run %+v, stored %+v", st.Run, r)
	}
	steps, err := f.w.ListSteps(f.ctx, &world.ListStepsParams{RunID: run})
	if err != nil {
		t.Fatalf("ListSteps: %v", err)
	}
	if len(st.Steps) != len(steps.Items) {
		t.Fatalf("folded %d steps, stored %d", len(st.Steps), len(steps.Items))
	}
	for _, s := range steps.Items {
		var found bool
		for _, g := range st.Steps {
			if g.StepID == s.StepID {
				found = g.Status == s.Status && g.Attempt == s.Attempt && jsonEqual(g.Output, s.Output)
			}
		}
		if !found {
			t.Fatalf("stored step %+v is not folded alike (%+v)", s, st.Steps)
		}
	}
	if len(st.Hooks) != 1 || st.Hooks[0].HookID != hook || len(st.Waits) != 1 || st.Waits[0].WaitID != wait {
		t.Fatalf("folded hooks %+v, waits %+v; want hook %s and wait %s", st.Hooks, st.Waits, hook, wait)
	}
}
