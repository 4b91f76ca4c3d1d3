package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// stepsThenSleep returns a workflow that calls the steps plan returns, one
// after the other, then sleeps an hour.
func stepsThenSleep(plan func(c *Context) []string) func(*Context, json.RawMessage) (json.RawMessage, error) {
	return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for _, name := range plan(c) {
			f := c.Step(name, mustJSON(name))
			c.Await(f.Done)
		}
		w := c.Sleep(time.Hour)
		c.Await(w.Done)
		return nil, nil
	}
}

// TestPatchedDecidesFromTheLog: a run of v1 (steps a and b, then an hour's
// sleep) is replayed by v2 code that changes the steps under a patch:
// adds one before them, reorders them, removes one. The run went past the
// patch without its marker, so it takes the old path: replayed without a
// hold and without a new event. A run started by v2 takes the new path,
// records the marker on its next creation, and replays its own marker
// onto the new path again.
func TestPatchedDecidesFromTheLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		v2     func(c *Context) []string
		newRun []string // the steps a run started by v2 creates
	}{
		{"added", func(c *Context) []string {
			if c.Patched("p", "here") {
				return []string{"x", "a", "b"}
			}
			return []string{"a", "b"}
		}, []string{"x", "a", "b"}},
		{"reordered", func(c *Context) []string {
			if c.Patched("p", "here") {
				return []string{"b", "a"}
			}
			return []string{"a", "b"}
		}, []string{"b", "a"}},
		{"removed", func(c *Context) []string {
			if c.Patched("p", "here") {
				return []string{"b"}
			}
			return []string{"a", "b"}
		}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Config{Linger: -1})
			for _, s := range []string{"a", "b", "x"} {
				h.reg.step(s, 0, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
			}
			var decided atomic.Int32 // 1: old path, 2: new path
			v2 := func(c *Context) []string {
				steps := tc.v2(c)
				if slices.Equal(steps, tc.newRun) {
					decided.Store(2)
				} else {
					decided.Store(1)
				}
				return steps
			}
			h.reg.wf("w", stepsThenSleep(func(*Context) []string { return []string{"a", "b"} }))
			ctx := context.Background()
			handle := func(id string) {
				t.Helper()
				if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
					t.Fatal(err)
				}
			}
			old := h.start("w", nil)
			handle(old)
			before := len(h.events(old))
			h.reg.wf("w", stepsThenSleep(v2))
			handle(old)
			assertAsleep(t, h, old, before)
			if decided.Load() != 1 {
				t.Fatalf("the old run took the new path")
			}

			fresh := h.start("w", nil)
			handle(fresh)
			if decided.Load() != 2 {
				t.Fatalf("the new run took the old path")
			}
			evs := h.events(fresh)
			var created []string
			for _, ev := range evs {
				if d, ok := ev.Data.(*world.StepCreated); ok {
					created = append(created, d.StepName)
					if want := len(created) == 1; runrules.HasPatch(&ev, "p") != want {
						t.Errorf("step_created %q carries %v, want the marker on the first creation only", d.StepName, d.Patches)
					}
				}
			}
			if !slices.Equal(created, tc.newRun) {
				t.Fatalf("new run created %q, want %q", created, tc.newRun)
			}
			decided.Store(0)
			h.eng.Close() // keeps no workflow alive: the next session replays
			handle(fresh) // a replay of the whole log: the marker leads to the new path
			assertAsleep(t, h, fresh, len(evs))
			if decided.Load() != 2 {
				t.Fatalf("the new run's replay took the old path")
			}
		})
	}
}

// assertAsleep checks that the run is still running, with n events.
func assertAsleep(t *testing.T, h *harness, id string, n int) {
	t.Helper()
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if evs := h.events(id); run.Status != world.RunStatusRunning || len(evs) != n {
		t.Fatalf("run %s (hold %+v) with %d events, want it asleep with %d", run.Status, run.Hold, len(evs), n)
	}
}

// TestPatchedMarkerRidesTheNextCreation: a patch whose new path creates
// nothing puts its marker on whatever the code creates next (here a
// sleep), and a patch asked twice keeps its first answer.
func TestPatchedMarkerRidesTheNextCreation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Linger: -1})
	var answers []bool
	h.reg.wf("w", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		answers = append(answers[:0], c.Patched("q", "here"), c.Patched("r", "here"), c.Patched("q", "here"))
		w := c.Sleep(time.Hour)
		c.Await(w.Done)
		return nil, nil
	})
	id := h.start("w", nil)
	if err := h.eng.Handle(context.Background(), world.Message{RunID: id}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(answers, []bool{true, true, true}) {
		t.Fatalf("answers %v", answers)
	}
	waits := 0
	for _, ev := range h.events(id) {
		if d, ok := ev.Data.(*world.WaitCreated); ok {
			waits++
			if !slices.Equal(d.Patches, []string{"q", "r"}) {
				t.Fatalf("wait_created carries %v, want [q r]", d.Patches)
			}
		}
	}
	if waits != 1 {
		t.Fatalf("%d wait_created, want 1", waits)
	}
}
