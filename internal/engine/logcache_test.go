package engine

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// loadCounter counts the events ListEvents returns.
type loadCounter struct {
	*localworld.World
	events, calls atomic.Int64
}

func (l *loadCounter) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	l.calls.Add(1)
	page, err := l.World.ListEvents(ctx, p)
	if page != nil {
		l.events.Add(int64(len(page.Items)))
	}
	return page, err
}

// floodWorkflow takes n payloads on one hook, running a step for each.
func floodWorkflow(n int) func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
	return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		h := c.Hook("flood-token", nil, false)
		for i := range n {
			c.Await(func() bool { return h.Len() > i })
			f := c.Step("add", mustJSON([2]int{i, 1}))
			c.Await(f.Done)
		}
		return mustJSON(n), nil
	}
}

// Each payload delivered to a waiting hook loads what it appended, not the
// log again: the 40th delivery reads a few events, where it used to read
// all 160 before it.
func TestHookFloodLoadsIncrementally(t *testing.T) {
	t.Parallel()
	const n = 40
	var lc *loadCounter
	h := newHarness(t, func(w *localworld.World) world.World { lc = &loadCounter{World: w}; return lc }, Config{Linger: -1})
	h.reg.step("add", 0, addStep)
	h.reg.wf("flood", floodWorkflow(n))
	// Each delivery is handled to its end before the next payload is sent
	// (drainUntil): what it loaded is then its own, not partly what the
	// last one's session read as it wound down on a busy machine.
	id := h.start("flood", nil)
	h.drainUntil(h.eng, id, 3) // run_created, run_started, hook_created
	loaded := make([]int64, n)
	payload := json.RawMessage(`"` + strings.Repeat("p", 1024) + `"`)
	for i := range n {
		before := lc.events.Load()
		if _, err := ResumeHook(context.Background(), h.w, time.Now, "flood-token", payload); err != nil {
			t.Fatal(err)
		}
		h.drainUntil(h.eng, id, int64(3+4*(i+1))) // hook_received, step_created, step_started, step_completed
		loaded[i] = lc.events.Load() - before
	}
	h.drainUntil(h.eng, id, math.MaxInt64) // to the end
	if run := h.wait(id); run.Status != world.RunStatusCompleted {
		t.Fatalf("run %s %+v", run.Status, run.Error)
	}
	// A few pages of 4 (the wake-up, a poll, the look after the lease's
	// release) whatever the log's length: from the 20th delivery on, the
	// log has more than 80 events, which reloading would read each time.
	for i := 20; i < n; i++ {
		if loaded[i] > 24 {
			t.Fatalf("delivery %d loaded %d events: %v", i+1, loaded[i], loaded)
		}
	}
	t.Logf("events loaded per delivery: %v", loaded)
}

// waitSeq waits until run id has seq events.
func (h *harness) waitSeq(id string, seq int64) {
	h.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		r, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if err != nil {
			h.t.Fatal(err)
		}
		if r.LastSeq >= seq {
			return
		}
		if r.Status.Terminal() {
			h.t.Fatalf("run ended %s at %d events, waiting for %d: %+v", r.Status, r.LastSeq, seq, r.Error)
		}
	}
	h.t.Fatalf("run %s did not reach %d events", id, seq)
}

// A session that takes its run's lease just after another released it
// finds the run's entry still out with that one, which puts it back once
// it has finished: take waits for it rather than have the caller load the
// whole log again and replay the workflow. It does not wait for a session
// still under its lease (one whose lease expired while it ran), nor past
// its context.
func TestLogCacheTakeWaitsForTheReleasedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	state := func(seq int64) runState {
		var st runState
		for i := int64(1); i <= seq; i++ {
			st.log.add(world.Event{Seq: i, RunID: "r", Data: &world.RunCreated{WorkflowName: "w"}})
		}
		st.lastSeq, st.runStatus = seq, world.RunStatusRunning
		return st
	}
	c := newLogCache(1 << 20)
	c.put("r", state(1), nil, nil)
	st, _, a := c.take(ctx, "r")
	if st == nil || a == nil {
		t.Fatalf("take: %v, loan %v", st, a)
	}

	// a still holds its lease: nothing to wait for.
	if st, _, b := c.take(ctx, "r"); st != nil || b == nil {
		t.Fatalf("take beside a session under its lease: %v, loan %v; want no state at once", st, b)
	}
	c.put("r", state(2), nil, nil) // the second take's, done
	st, _, a = c.take(ctx, "r")
	if st == nil || st.lastSeq != 2 {
		t.Fatalf("take: %+v", st)
	}

	c.releasing(a, true)
	got := make(chan *runState)
	go func() {
		st, _, _ := c.take(ctx, "r")
		got <- st
	}()
	for waiting, deadline := 0, time.Now().Add(time.Minute); waiting == 0; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		waiting = a.waiting
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("take did not wait for the session that released the lease")
		}
	}
	c.put("r", state(3), nil, a) // a has finished after releasing its lease
	if st := <-got; st == nil || st.lastSeq != 3 {
		t.Fatalf("take after a released session: %+v, want what it put back (seq 3)", st)
	}

	_, _, a = c.take(ctx, "r") // out again (nothing cached: a fresh loan)
	c.releasing(a, true)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if st, _, b := c.take(cctx, "r"); st != nil || b == nil {
		t.Fatalf("take past its context: %v, loan %v", st, b)
	}
}
