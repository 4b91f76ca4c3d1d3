package worldtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// The watch group checks watching the World (watch.Watch, watch.Cursor):
// its own world.Watcher when it has one, else the polling fallback.

func watchCases() []testCase {
	return []testCase{
		{"run_in_order", testWatchRunInOrder},
		{"run_types", testWatchRunTypes},
		{"run_resume", testWatchRunResume},
		{"run_ends_after_terminal", testWatchRunEnds},
		{"run_errors", testWatchRunErrors},
		{"all_runs", testWatchAllRuns},
		{"all_runs_from_now", testWatchAllFromNow},
		{"all_runs_resume", testWatchAllResume},
		{"all_runs_types", testWatchAllTypes},
		{"cancel_ends", testWatchCancel},
		{"fold_matches_state", testWatchFold},
	}
}

// watchTimeout bounds (times Options.Slow) the wait for an event a watch
// owes, or for its end: only a failing case waits it out, so it is long
// enough for a World's polls on a busy machine.
const watchTimeout = 20 * time.Second

// watching is a watch consumed by a goroutine, for a test to take from.
type watching struct {
	t       *testing.T
	ch      chan world.WatchEvent
	end     chan error // the watch's last error (nil when it ended by itself)
	cancel  context.CancelFunc
	timeout time.Duration
}

// watch starts a watch; the test's cleanup stops it and checks that it
// ends.
func (f *fixture) watch(p world.WatchParams) *watching {
	f.t.Helper()
	if p.PollMin == 0 {
		p.PollMin, p.PollMax = 5*time.Millisecond, 50*time.Millisecond
	}
	ctx, cancel := context.WithCancel(f.ctx)
	w := &watching{t: f.t, ch: make(chan world.WatchEvent), end: make(chan error, 1), cancel: cancel, timeout: f.d(watchTimeout)}
	go func() {
		var last error
		for e, err := range watch.Watch(ctx, f.w, &p) {
			if err != nil {
				last = err
				break
			}
			select {
			case w.ch <- e:
			case <-ctx.Done():
			}
		}
		close(w.ch)
		w.end <- last
	}()
	f.t.Cleanup(func() { w.stop() })
	return w
}

// next returns the next event; it fails the test when the watch ends or
// nothing comes in time.
func (w *watching) next() world.WatchEvent {
	w.t.Helper()
	select {
	case e, ok := <-w.ch:
		if !ok {
			w.t.Fatalf("the watch ended early: %v", w.wait())
		}
		return e
	case <-time.After(w.timeout):
		w.t.Fatalf("no event within %s", w.timeout)
	}
	return world.WatchEvent{}
}

// poll returns the next event if one comes within d; it fails the test
// when the watch ends.
func (w *watching) poll(d time.Duration) (world.WatchEvent, bool) {
	w.t.Helper()
	select {
	case e, ok := <-w.ch:
		if !ok {
			w.t.Fatalf("the watch ended early: %v", w.wait())
		}
		return e, true
	case <-time.After(d):
		return world.WatchEvent{}, false
	}
}

// take returns the next n events.
func (w *watching) take(n int) []world.WatchEvent {
	w.t.Helper()
	out := make([]world.WatchEvent, n)
	for i := range out {
		out[i] = w.next()
	}
	return out
}

// quiet fails if an event comes within d.
func (w *watching) quiet(d time.Duration) {
	w.t.Helper()
	select {
	case e, ok := <-w.ch:
		if ok {
			w.t.Fatalf("unexpected event %d %s of %s", e.Event.Seq, e.Event.Type(), e.Event.RunID)
		}
	case <-time.After(d):
	}
}

// wait waits for the watch to end by itself and returns its last error.
func (w *watching) wait() error {
	w.t.Helper()
	deadline := time.After(w.timeout)
	for open := true; open; {
		select {
		case _, open = <-w.ch:
		case <-deadline:
			w.cancel() // lets the watch's goroutine end before the test does
			w.t.Fatalf("the watch did not end within %s", w.timeout)
		}
	}
	err := <-w.end
	w.end <- err
	return err
}

// stop cancels the watch and waits until it has ended.
func (w *watching) stop() error {
	w.cancel()
	return w.wait()
}

// steps appends n serial steps (created, started, completed) to run.
func (f *fixture) steps(run string, n int) {
	f.t.Helper()
	for range n {
		id := ids.New(world.PrefixStep)
		f.mustAppend(run,
			ev(id, &world.StepCreated{StepName: "watched", Input: json.RawMessage(`1`)}),
			ev(id, &world.StepStarted{LeaseTTL: time.Minute}))
		f.mustAppend(run, ev(id, &world.StepCompleted{Result: json.RawMessage(`2`)}))
	}
}

// wantSame fails unless got are the events of want (sequence numbers and
// types), in order.
func wantSame(t *testing.T, what string, got []world.WatchEvent, want []world.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i].Event, want[i]
		if g.RunID != w.RunID || g.Seq != w.Seq || g.Type() != w.Type() || g.EventID != w.EventID {
			t.Fatalf("%s: event %d is %s %d %s, want %s %d %s", what, i, g.RunID, g.Seq, g.Type(), w.RunID, w.Seq, w.Type())
		}
		if got[i].Cursor == "" {
			t.Fatalf("%s: event %d has no cursor", what, i)
		}
	}
}

func testWatchRunInOrder(t *testing.T, f *fixture) {
	run := f.startedRun()
	w := f.watch(world.WatchParams{RunID: run})
	first := w.take(2) // the log so far: run_created, run_started
	f.steps(run, 3)
	got := append(first, w.take(9)...)
	wantSame(t, "a watch from the start", got, f.events(run))
	w.quiet(f.d(100 * time.Millisecond))
}

func testWatchRunTypes(t *testing.T, f *fixture) {
	run := f.startedRun()
	w := f.watch(world.WatchParams{RunID: run, Types: []world.EventType{world.EventStepCompleted, world.EventRunCompleted}})
	f.steps(run, 2)
	f.endRun(run, world.EventRunCompleted)
	got := w.take(3)
	var want []world.Event
	for _, e := range f.events(run) {
		if e.Type() == world.EventStepCompleted || e.Type() == world.EventRunCompleted {
			want = append(want, e)
		}
	}
	wantSame(t, "a watch of step_completed and run_completed", got, want)
	if err := w.wait(); err != nil {
		t.Fatalf("the watch ended with %v after run_completed, want nil", err)
	}
}

func testWatchRunResume(t *testing.T, f *fixture) {
	run := f.startedRun()
	f.steps(run, 1)
	w := f.watch(world.WatchParams{RunID: run})
	got := w.take(3)
	if err := w.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped watch ended with %v", err)
	}
	f.steps(run, 2) // appended while nobody watches
	again := f.watch(world.WatchParams{RunID: run, After: got[2].Cursor})
	got = append(got, again.take(8)...)
	all := f.events(run)
	wantSame(t, "a watch resumed after event 3", got, all)
	again.quiet(f.d(100 * time.Millisecond))

	// A filtered event's position is covered by the next delivered one.
	typed := f.watch(world.WatchParams{RunID: run, Types: []world.EventType{world.EventStepCompleted}})
	c := typed.take(2)[1].Cursor
	typed.stop()
	rest := f.watch(world.WatchParams{RunID: run, After: c})
	wantSame(t, "a watch resumed after a filtered watch's cursor", rest.take(3), all[8:])
}

func testWatchRunEnds(t *testing.T, f *fixture) {
	run := f.startedRun()
	w := f.watch(world.WatchParams{RunID: run})
	w.take(2)
	f.endRun(run, world.EventRunCancelled)
	last := w.next()
	if last.Event.Type() != world.EventRunCancelled {
		t.Fatalf("got %s, want run_cancelled", last.Event.Type())
	}
	if err := w.wait(); err != nil {
		t.Fatalf("the watch ended with %v after the run's end, want nil", err)
	}
	after := f.watch(world.WatchParams{RunID: run, After: last.Cursor})
	if err := after.wait(); err != nil {
		t.Fatalf("a watch after the terminal event ended with %v, want nil", err)
	}
	c, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{RunID: run})
	if err != nil || c != world.RunCursor(run, 3) {
		t.Fatalf("WatchCursor of a run with 3 events = %q, %v; want RunCursor(run, 3)", c, err)
	}
}

func testWatchRunErrors(t *testing.T, f *fixture) {
	run := f.startedRun()
	other := f.startedRun()
	for _, tc := range []struct {
		name string
		p    world.WatchParams
		want error
	}{
		{"an unknown run", world.WatchParams{RunID: ids.New(world.PrefixRun)}, world.ErrNotFound},
		{"a malformed cursor", world.WatchParams{RunID: run, After: "not a cursor"}, world.ErrInvalid},
		{"another run's cursor", world.WatchParams{RunID: run, After: world.RunCursor(other, 1)}, world.ErrInvalid},
		{"a one-run cursor for every run", world.WatchParams{After: world.RunCursor(other, 1)}, world.ErrInvalid},
		{"an unknown type", world.WatchParams{RunID: run, Types: []world.EventType{"nope"}}, world.ErrInvalid},
		{"a malformed run ID", world.WatchParams{RunID: "run-1"}, world.ErrInvalid},
	} {
		w := f.watch(tc.p)
		wantErr(t, w.wait(), tc.want, "Watch of %s", tc.name)
	}
	_, err := watch.Cursor(f.ctx, f.w, &world.WatchParams{RunID: ids.New(world.PrefixRun)})
	wantErr(t, err, world.ErrNotFound, "WatchCursor of an unknown run")
}
