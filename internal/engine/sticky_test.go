package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// countedFlood is floodWorkflow counting the calls of the workflow
// function (entries) and the payloads its loop decodes (decodes).
func countedFlood(n int, entries, decodes *atomic.Int64) func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
	return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		entries.Add(1)
		h := c.Hook("flood-token", nil, false)
		for i := range n {
			c.Await(func() bool { return h.Len() > i })
			p, _ := h.Payload(i)
			var s string
			if err := json.Unmarshal(p, &s); err != nil {
				return nil, err
			}
			decodes.Add(1)
			f := c.Step("add", mustJSON([2]int{i, len(s)}))
			c.Await(f.Done)
		}
		return mustJSON(n), nil
	}
}

// A webhook flood costs each delivery what it brings: the run's workflow
// stays alive between its continuations and takes each payload in as it
// comes, where each delivery used to replay the workflow from its start
// and decode every payload before it again (n deliveries: n(n+1)/2
// decodes, 465 for 30; now 30, and one call of the workflow function).
func TestStickyFloodDecodesEachPayloadOnce(t *testing.T) {
	t.Parallel()
	const n = 30
	var entries, decodes atomic.Int64
	h := newHarness(t, nil, Config{Linger: -1})
	h.reg.step("add", 0, addStep)
	h.reg.wf("flood", countedFlood(n, &entries, &decodes))
	h.work(1, nil)
	id := h.start("flood", nil)
	h.waitSeq(id, 3) // run_created, run_started, hook_created
	payload := json.RawMessage(`"` + strings.Repeat("p", 1024) + `"`)
	for i := range n {
		if _, err := ResumeHook(context.Background(), h.w, time.Now, "flood-token", payload); err != nil {
			t.Fatal(err)
		}
		h.waitSeq(id, int64(3+4*(i+1))) // hook_received, step_created, step_started, step_completed
	}
	if run := h.wait(id); run.Status != world.RunStatusCompleted {
		t.Fatalf("run %s %+v", run.Status, run.Error)
	}
	// A commit refused by a racing write rebuilds the workflow once: a
	// little slack, far below the quadratic cost.
	if e, d := entries.Load(), decodes.Load(); e > 3 || d > 3*n {
		t.Fatalf("%d deliveries: the workflow function was called %d times and decoded %d payloads, want 1 and %d", n, e, d, n)
	}
	t.Logf("workflow calls %d, payloads decoded %d", entries.Load(), decodes.Load())
}

// sameWorkflow uses what replay must reproduce exactly: deterministic IDs
// and randomness, a patch decision, timers, attributes, step inputs
// computed from payloads and results.
func sameWorkflow(n int, entries *atomic.Int64) func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
	return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		entries.Add(1)
		h := c.Hook("same-token", nil, false)
		sum := 0
		for i := range n {
			c.Await(func() bool { return h.Len() > i })
			p, _ := h.Payload(i)
			var v int
			if err := json.Unmarshal(p, &v); err != nil {
				return nil, err
			}
			sum += v + c.Rand().IntN(1000)
			if i == 2 && c.Patched("same-patch", "sticky_test.go") {
				sum += 7
			}
			f := c.Step("add", mustJSON([2]int{sum, len(c.NewID())}))
			c.Await(f.Done)
			res, _ := f.Result()
			if err := json.Unmarshal(res, &sum); err != nil {
				return nil, err
			}
			if i%4 == 3 {
				w := c.Sleep(time.Millisecond)
				c.Await(w.Done)
			}
			if i == n/2 {
				if err := c.SetAttributes(map[string]string{"half": fmt.Sprint(sum)}); err != nil {
					return nil, err
				}
			}
		}
		return mustJSON(sum), nil
	}
}

// sameSeq is the number of events sameWorkflow's run holds once it has
// taken in its (i+1)-th payload.
func sameSeq(n, i int) int64 {
	seq := 3 // run_created, run_started, hook_created
	for k := 0; k <= i; k++ {
		seq += 4 // hook_received, step_created, step_started, step_completed
		if k%4 == 3 {
			seq += 2 // wait_created, wait_completed
		}
		if k == n/2 {
			seq++ // attribute_set
		}
	}
	return int64(seq)
}

// A workflow kept alive between deliveries makes the history a replay of
// each delivery makes: the same run (same ID, same payloads) on an engine
// that keeps workflows and on one that keeps nothing (LogCacheBytes < 0)
// records the same events, and the log the first recorded replays with no
// divergence.
func TestStickySameHistoryAsReplay(t *testing.T) {
	t.Parallel()
	const n = 12
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	play := func(cfg Config) ([]world.Event, int64) {
		var entries atomic.Int64
		h := newHarness(t, nil, cfg)
		h.reg.step("add", 0, addStep)
		h.reg.wf("same", sameWorkflow(n, &entries))
		// Each delivery is handled to its end before the next payload is
		// sent (drainUntil), so that every one of them is a session of its
		// own: a payload arriving while a session winds down is taken in
		// by that session, which would make the count of replays depend
		// on the machine's speed.
		if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "same", Input: mustJSON(nil)}}}}); err != nil {
			t.Fatal(err)
		}
		if err := Wake(context.Background(), h.w, time.Now, runID, "start:"+runID); err != nil {
			t.Fatal(err)
		}
		h.drainUntil(h.eng, runID, 3)
		for i := range n {
			if _, err := ResumeHook(context.Background(), h.w, time.Now, "same-token", mustJSON(i*i)); err != nil {
				t.Fatal(err)
			}
			h.drainUntil(h.eng, runID, sameSeq(n, i))
		}
		h.drainUntil(h.eng, runID, math.MaxInt64) // to the end
		if run := h.wait(runID); run.Status != world.RunStatusCompleted {
			t.Fatalf("run %s %+v", run.Status, run.Error)
		}
		return h.events(runID), entries.Load()
	}
	kept, keptCalls := play(Config{Linger: -1})
	fresh, freshCalls := play(Config{Linger: -1, Options: Options{LogCacheBytes: -1}})
	if keptCalls >= freshCalls || freshCalls < n {
		t.Fatalf("workflow calls: %d kept, %d replayed: the kept workflow was not kept", keptCalls, freshCalls)
	}
	if a, b := historyOf(kept), historyOf(fresh); a != b {
		t.Fatalf("histories differ:\nkept:\n%s\nreplayed:\n%s", a, b)
	}
	reg := newRegistry()
	reg.wf("same", sameWorkflow(n, new(atomic.Int64)))
	res, err := CheckLog(reg, kept)
	if err != nil || res.Divergence != nil || !res.Returned || !strings.Contains(historyOf(kept), "run_completed  "+string(res.Output)+"\n") {
		t.Fatalf("the kept workflow's log does not replay: %v %+v", err, res)
	}
}

// historyOf renders what a log records, without its times.
func historyOf(evs []world.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d %s %s", ev.Seq, ev.Type(), ev.CorrelationID)
		switch d := ev.Data.(type) {
		case *world.StepCreated:
			fmt.Fprintf(&b, " %s %s %q", d.StepName, d.Input, d.Patches)
		case *world.StepCompleted:
			fmt.Fprintf(&b, " %s", d.Result)
		case *world.HookCreated:
			fmt.Fprintf(&b, " %s %q", d.Token, d.Patches)
		case *world.HookReceived:
			fmt.Fprintf(&b, " %s", d.Payload)
		case *world.AttributeSet:
			fmt.Fprintf(&b, " %v", d.Attributes)
		case *world.RunCompleted:
			fmt.Fprintf(&b, " %s", d.Output)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// drainUntil handles the queue's messages with eng until run id holds seq
// events and the queue has nothing more for now.
func (h *harness) drainUntil(eng *Engine, id string, seq int64) {
	h.t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); { // a bound against a hang
		ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: 20 * time.Millisecond, Visibility: time.Minute})
		if err != nil {
			h.t.Fatal(err)
		}
		for _, d := range ds {
			msg, err := world.DecodeMessage(d.Body)
			if err == nil {
				err = eng.HandleDelivery(ctx, msg, d.Attempt)
			}
			if err != nil && !IsPermanent(err) {
				h.t.Fatalf("handle %+v: %v", msg, err)
			}
			_ = h.lw.Ack(ctx, &world.AckParams{Receipt: d.Receipt})
		}
		r, err := h.lw.GetRun(ctx, &world.GetRunParams{RunID: id})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(ds) == 0 && (r.LastSeq >= seq || r.Status.Terminal()) {
			return
		}
	}
	h.t.Fatalf("run %s did not reach %d events", id, seq)
}

// A kept workflow whose run another executor went on with meanwhile is
// not fed what that executor committed: the log no longer extends what it
// consumed with events it may take in, so it is dropped and the workflow
// replayed, and the run ends as it would have.
func TestStickyStaleAfterAnotherExecutor(t *testing.T) {
	t.Parallel()
	const n = 3
	var entries, decodes atomic.Int64
	h := newHarness(t, nil, Config{Linger: -1})
	h.reg.step("add", 0, addStep)
	h.reg.wf("flood", countedFlood(n, &entries, &decodes))
	other, err := New(Config{World: h.w, Registry: h.reg, Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	id := h.start("flood", nil)
	h.drainUntil(h.eng, id, 3)
	payload := mustJSON("x")
	deliver := func(eng *Engine, i int) {
		if _, err := ResumeHook(context.Background(), h.w, time.Now, "flood-token", payload); err != nil {
			t.Fatal(err)
		}
		h.drainUntil(eng, id, int64(3+4*(i+1)))
	}
	deliver(h.eng, 0) // h.eng keeps the workflow
	calls := entries.Load()
	deliver(other, 1) // the other replays it, commits its step
	if got := entries.Load(); got != calls+1 {
		t.Fatalf("the other executor called the workflow %d times, want a replay", got-calls)
	}
	calls = entries.Load()
	deliver(h.eng, 2) // stale: the log holds the other's step_created
	if got := entries.Load(); got != calls+1 {
		t.Fatalf("after another executor's commits, the workflow was called %d times, want a replay", got-calls)
	}
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != "3" {
		t.Fatalf("run %s %s %+v", run.Status, run.Output, run.Error)
	}
	evs := h.events(id)
	if c := count(evs, world.EventStepCompleted); c != n {
		t.Fatalf("%d step_completed, want %d", c, n)
	}
}

// parkedReplayer returns a replayer whose workflow waits for good, its
// coroutine parked.
func parkedReplayer(t *testing.T, runID string, wf *Workflow) *replayer {
	t.Helper()
	r := newReplayer(wf, slog.New(slog.DiscardHandler))
	r.consume(&world.Event{Seq: 1, RunID: runID, CreatedAt: time.Now(), Data: &world.RunCreated{WorkflowName: wf.Name}})
	if r.co == nil || r.over() {
		t.Fatal("the workflow is not waiting")
	}
	return r
}

// The cache keeps at most maxLiveSessions workflows alive and its bytes
// within bounds, least recently used out first; whatever it drops (or is
// handed after Close) has its workflow's goroutine stopped.
func TestStickyEvictionStopsWorkflows(t *testing.T) {
	t.Parallel()
	wf := &Workflow{Name: "wait", Fn: func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		c.Await(func() bool { return false })
		return nil, nil
	}}
	entry := func(i int) (string, runState, *sticky) {
		id := fmt.Sprintf("run-%d", i)
		var st runState
		st.log.add(world.Event{Seq: 1, RunID: id, Data: &world.RunCreated{WorkflowName: "wait"}})
		st.lastSeq, st.runStatus = 1, world.RunStatusRunning
		return id, st, &sticky{r: parkedReplayer(t, id, wf), wf: wf}
	}
	stopped := func(l *sticky) bool { return l.r.co == nil }

	c := newLogCache(1 << 30)
	var lives []*sticky
	for i := range maxLiveSessions + 2 {
		id, st, l := entry(i)
		c.put(id, st, l, nil)
		lives = append(lives, l)
	}
	if !stopped(lives[0]) || !stopped(lives[1]) || stopped(lives[2]) || c.live != maxLiveSessions {
		t.Fatalf("over %d live workflows: the oldest are not stopped (live %d)", maxLiveSessions, c.live)
	}
	if st, l, _ := c.take(context.Background(), "run-0"); st == nil || l != nil {
		t.Fatalf("the log of a stopped workflow's run was not kept (%v) or its workflow was (%v)", st != nil, l != nil)
	}
	st, l, _ := c.take(context.Background(), "run-2")
	if st == nil || l != lives[2] {
		t.Fatal("a live workflow was not handed back")
	}
	l.stop()

	small := newLogCache(2*sessionBytes + 1024)
	var few []*sticky
	for i := range 3 {
		id, st, l := entry(i)
		small.put(id, st, l, nil)
		few = append(few, l)
	}
	if !stopped(few[0]) || stopped(few[1]) || stopped(few[2]) {
		t.Fatal("past the byte bound, the least recently used workflow was not stopped first")
	}
	id, old, stale := entry(1)
	old.lastSeq = 0
	small.put(id, old, stale, nil) // an earlier state than the one kept
	if !stopped(stale) || stopped(few[1]) {
		t.Fatal("an earlier state of a run replaced a later one")
	}

	for _, cache := range []*logCache{c, small} {
		cache.close()
	}
	for i, l := range append(lives, few...) {
		if !stopped(l) {
			t.Fatalf("workflow %d still alive after close", i)
		}
	}
	id, fresh, late := entry(99)
	c.put(id, fresh, late, nil)
	if !stopped(late) {
		t.Fatal("a workflow handed to a closed cache was kept")
	}
	off := newLogCache(-1)
	id, unkept, l := entry(100)
	off.put(id, unkept, l, nil)
	if !stopped(l) {
		t.Fatal("a cache that keeps nothing kept a workflow")
	}
}

// liveCount is how many workflows the engine keeps alive.
func liveCount(e *Engine) int {
	e.logs.mu.Lock()
	defer e.logs.mu.Unlock()
	return e.logs.live
}

// A run cancelled while its workflow is kept ends without it: the
// cancellation is no event a kept workflow takes in, and the run's end
// keeps nothing.
func TestStickyCancelledRunKeepsNothing(t *testing.T) {
	t.Parallel()
	var entries, decodes atomic.Int64
	h := newHarness(t, nil, Config{Linger: -1})
	h.reg.step("add", 0, addStep)
	h.reg.wf("flood", countedFlood(5, &entries, &decodes))
	id := h.start("flood", nil)
	h.drainUntil(h.eng, id, 3)
	if _, err := ResumeHook(context.Background(), h.w, time.Now, "flood-token", mustJSON("x")); err != nil {
		t.Fatal(err)
	}
	h.drainUntil(h.eng, id, 7)
	if n := liveCount(h.eng); n != 1 {
		t.Fatalf("%d workflows kept after a delivery, want 1", n)
	}
	if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "test"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := Wake(context.Background(), h.w, time.Now, id, "cancel:"+id); err != nil {
		t.Fatal(err)
	}
	h.drainUntil(h.eng, id, 8)
	if run := h.wait(id); run.Status != world.RunStatusCancelled {
		t.Fatalf("run %s", run.Status)
	}
	if n := liveCount(h.eng); n != 0 {
		t.Fatalf("%d workflows kept after the run's end, want 0", n)
	}
	if e := entries.Load(); e != 1 {
		t.Fatalf("the workflow was called %d times, want 1 (kept, then dropped)", e)
	}
}

// A kept workflow takes in what background executors record (a fan-out
// wider than the inline capacity) as a replay does: the run ends with the
// right result, its log replays without a divergence, and the workflow was
// not replayed at each delivery.
func TestStickyTakesInBackgroundSteps(t *testing.T) {
	t.Parallel()
	const n = 4
	var entries atomic.Int64
	h := newHarness(t, nil, Config{Linger: -1, Options: Options{InlineConcurrency: 1}})
	h.reg.step("add", 0, addStep)
	fan := func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		entries.Add(1)
		h := c.Hook("fan-token", nil, false)
		sum := 0
		for i := range n {
			c.Await(func() bool { return h.Len() > i })
			fs := []*Future{c.Step("add", mustJSON([2]int{i, 1})), c.Step("add", mustJSON([2]int{i, 2})), c.Step("add", mustJSON([2]int{i, 3}))}
			c.Await(func() bool { return fs[0].Done() && fs[1].Done() && fs[2].Done() })
			for _, f := range fs {
				res, failure := f.Result()
				var v int
				if failure != nil || json.Unmarshal(res, &v) != nil {
					return nil, fmt.Errorf("step %s: %+v", f.ID(), failure)
				}
				sum += v
			}
		}
		return mustJSON(sum), nil
	}
	h.reg.wf("fan", fan)
	id := h.start("fan", nil)
	h.drainUntil(h.eng, id, 3)
	for i := range n {
		if _, err := ResumeHook(context.Background(), h.w, time.Now, "fan-token", mustJSON(i)); err != nil {
			t.Fatal(err)
		}
		// hook_received, then per step step_created, step_started and
		// step_completed.
		h.drainUntil(h.eng, id, int64(3+10*(i+1)))
	}
	run := h.wait(id)
	want := 0
	for i := range n {
		want += 3*i + 6
	}
	if run.Status != world.RunStatusCompleted || string(run.Output) != fmt.Sprint(want) {
		t.Fatalf("run %s %s %+v, want completed with %d", run.Status, run.Output, run.Error, want)
	}
	evs := h.events(id)
	queued := 0
	for _, ev := range evs {
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Queued {
			queued++
		}
	}
	if queued == 0 {
		t.Fatal("no step ran in the background: the test needs a wider fan-out")
	}
	reg := newRegistry()
	reg.wf("fan", fan)
	if res, err := CheckLog(reg, evs); err != nil || res.Divergence != nil || !res.Returned {
		t.Fatalf("the log does not replay: %v %+v", err, res)
	}
	if e := entries.Load(); e >= int64(n)+1 {
		t.Fatalf("the workflow was called %d times for %d deliveries: not kept", e, n)
	}
	t.Logf("workflow calls %d (CheckLog's included), background starts %d", entries.Load(), queued)
}
