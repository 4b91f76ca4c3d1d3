package localworld

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skeinflow/skein/world"
)

var watchIDs = world.NewIDSource(nil, nil)

// watchNext starts a watch and returns a function that takes its next
// event, failing after within.
func watchNext(t *testing.T, w *World, p world.WatchParams, within time.Duration) func() world.WatchEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan world.WatchEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range w.Watch(ctx, &p) {
			if err != nil {
				return
			}
			select {
			case ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() world.WatchEvent {
		t.Helper()
		select {
		case e := <-ch:
			return e
		case <-time.After(within):
			t.Fatalf("no event within %s", within)
		}
		return world.WatchEvent{}
	}
}

func createRun(t *testing.T, w *World) string {
	t.Helper()
	id := watchIDs.New(world.PrefixRun)
	if _, err := w.Append(t.Context(), &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// A writing World pushes: its watchers wake at the commit, whatever the
// polling bounds say (they apply to a read-only World).
func TestWatchPushedAtCommit(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		cfg := Config{Sync: m.sync, watchPollMin: time.Hour, watchPollMax: time.Hour}
		if m.durable {
			cfg.Path = filepath.Join(t.TempDir(), "w.db")
		}
		w, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		// From a cursor of the present: a watch from an empty one takes
		// the present when its goroutine starts, which may follow the
		// first commit on a busy machine. Only a push delivers within the
		// bound: the polls are an hour apart.
		c, err := w.WatchCursor(t.Context(), &world.WatchParams{})
		if err != nil {
			t.Fatal(err)
		}
		next := watchNext(t, w, world.WatchParams{After: c}, 20*time.Second)
		for range 3 {
			id := createRun(t, w)
			if e := next(); e.Event.RunID != id || e.Event.Type() != world.EventRunCreated {
				t.Fatalf("got %s of %s, want run_created of %s", e.Event.Type(), e.Event.RunID, id)
			}
		}
	})
}

// A read-only World over a store another World writes sees its commits by
// reading the file.
func TestWatchReadOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	w, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := createRun(t, w)
	ro, err := Open(Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, err := ro.WatchCursor(t.Context(), &world.WatchParams{})
	if err != nil {
		t.Fatal(err)
	}
	all := watchNext(t, ro, world.WatchParams{After: c}, 5*time.Second)
	one := watchNext(t, ro, world.WatchParams{RunID: before}, 5*time.Second)
	if e := one(); e.Event.Seq != 1 {
		t.Fatalf("one-run watch: got event %d, want 1", e.Event.Seq)
	}
	after := createRun(t, w)
	if _, err := w.Append(t.Context(), &world.AppendParams{RunID: before, Events: []world.EventInput{{Data: &world.RunStarted{}}}}); err != nil {
		t.Fatal(err)
	}
	if e := all(); e.Event.RunID != after {
		t.Fatalf("every-run watch: got %s of %s, want run_created of %s", e.Event.Type(), e.Event.RunID, after)
	}
	if e := all(); e.Event.RunID != before || e.Event.Seq != 2 {
		t.Fatalf("every-run watch: got %s %d of %s, want run_started of %s", e.Event.Type(), e.Event.Seq, e.Event.RunID, before)
	}
	if e := one(); e.Event.Seq != 2 {
		t.Fatalf("one-run watch: got event %d, want 2", e.Event.Seq)
	}
}

// Watches cancelled, or ended by Close, leave no goroutine behind. Not
// parallel: the check sees the whole process.
func TestWatchLeavesNoGoroutine(t *testing.T) {
	opts := goleak.IgnoreCurrent()
	path := filepath.Join(t.TempDir(), "w.db")
	w, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	run := createRun(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	var ends []chan error
	for _, sw := range []*World{w, ro} {
		for _, p := range []world.WatchParams{{RunID: run}, {}} {
			end := make(chan error, 1)
			ends = append(ends, end)
			go func() {
				var last error
				for _, err := range sw.Watch(ctx, &p) {
					last = err
				}
				end <- last
			}()
		}
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	for _, end := range ends {
		select {
		case <-end:
		case <-time.After(5 * time.Second):
			t.Fatal("a cancelled watch did not end")
		}
	}
	_ = ro.Close()
	_ = w.Close()
	goleak.VerifyNone(t, opts)
}
