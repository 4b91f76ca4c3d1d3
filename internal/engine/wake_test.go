package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// msgWorld records the messages enqueued (deduplicated ones excluded).
type msgWorld struct {
	*localworld.World
	mu   sync.Mutex
	msgs []world.Message
}

func (m *msgWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	res, err := m.World.Enqueue(ctx, p)
	if err == nil && !res.Duplicate {
		if msg, derr := world.DecodeMessage(p.Body); derr == nil {
			m.mu.Lock()
			m.msgs = append(m.msgs, msg)
			m.mu.Unlock()
		}
	}
	return res, err
}

func (m *msgWorld) snapshot() []world.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]world.Message(nil), m.msgs...)
}

// The steps beyond the inline concurrency travel as ceil(excess/inline)
// messages, each executed in one invocation, and the run completes.
func TestBackgroundStepsShareMessages(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{Options: Options{InlineConcurrency: 4}})
	h.reg.step("add", 3, addStep)
	h.reg.wf("fan", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		var fs []*Future
		for i := range 14 {
			fs = append(fs, c.Step("add", mustJSON([2]int{i, 1})))
		}
		c.Await(func() bool {
			for _, f := range fs {
				if !f.Done() {
					return false
				}
			}
			return true
		})
		return mustJSON("ok"), nil
	})
	h.work(2, nil)
	id := h.start("fan", nil)
	if run := h.wait(id); run.Status != world.RunStatusCompleted {
		t.Fatalf("run = %s %+v", run.Status, run.Error)
	}
	if n := count(h.events(id), world.EventStepCompleted); n != 14 {
		t.Fatalf("step_completed = %d", n)
	}
	stepMsgs, stepIDs := 0, map[string]bool{}
	for _, m := range mw.snapshot() {
		if ids := runrules.Steps(m); len(ids) > 0 {
			stepMsgs++
			for _, s := range ids {
				stepIDs[s] = true
			}
		}
	}
	// 14 steps, 4 inline: 10 in background, in ceil(10/4) = 3 messages.
	if stepMsgs != 3 || len(stepIDs) != 10 {
		t.Errorf("step messages = %d naming %d steps, want 3 naming 10", stepMsgs, len(stepIDs))
	}
	// And nothing else but the start: no continuation, no wake-up at a
	// lease's expiry (the executors took the run on themselves).
	if n := len(mw.snapshot()); n != 1+stepMsgs {
		t.Errorf("messages = %+v, want the start and the %d step messages", mw.snapshot(), stepMsgs)
	}
}

// A background executor that completes its step while the run lease is
// held leaves the run to the holder (which re-reads the log after releasing
// the lease); with the lease free it continues the run itself, in its own
// invocation: neither case sends a message.
func TestBackgroundStepWakesOnlyWithoutLeaseHolder(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	h.reg.step("add", 0, addStep)
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f1, f2 := c.Step("add", mustJSON([2]int{1, 2})), c.Step("add", mustJSON([2]int{3, 4}))
		c.Await(func() bool { return f1.Done() && f2.Done() })
		var a, b int
		r1, _ := f1.Result()
		r2, _ := f2.Result()
		_ = json.Unmarshal(r1, &a)
		_ = json.Unmarshal(r2, &b)
		return mustJSON(a + b), nil
	})
	ctx := context.Background()
	runID := h.ids.New(world.PrefixRun)
	ids := newDetSource(runID)
	s1, s2 := ids.id(world.PrefixStep), ids.id(world.PrefixStep)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "w", Input: mustJSON(nil)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: s1, Data: &world.StepCreated{StepName: "add", Input: mustJSON([2]int{1, 2})}},
		{CorrelationID: s2, Data: &world.StepCreated{StepName: "add", Input: mustJSON([2]int{3, 4})}},
	}}); err != nil {
		t.Fatal(err)
	}
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: s1}); err != nil {
		t.Fatal(err)
	}
	if got := mw.snapshot(); len(got) != 0 {
		t.Fatalf("enqueued %+v while the lease was held", got)
	}
	if run, err := h.w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil || run.Status != world.RunStatusRunning {
		t.Fatalf("run while the lease was held: %+v %v", run, err)
	}
	if err := h.w.ReleaseRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: s2}); err != nil {
		t.Fatal(err)
	}
	if got := mw.snapshot(); len(got) != 0 {
		t.Fatalf("enqueued %+v, want none: the executor goes on itself", got)
	}
	run, err := h.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "10" {
		t.Fatalf("run after the free-lease step: %+v %v, want completed with 10", run, err)
	}
	// The executor released the lease it took.
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatalf("lease after the executor: %v", err)
	}
	// Every step attempt a background executor started is marked queued.
	for _, ev := range h.events(runID) {
		if d, ok := ev.Data.(*world.StepStarted); ok && !d.Queued {
			t.Errorf("step_started %s not marked queued", ev.CorrelationID)
		}
	}
}

// oneStepRun appends the log of a run of workflow "one" (one "add" step)
// whose step has been created and started by someone else, with events
// after that, and returns the run and step IDs.
func oneStepRun(t *testing.T, h *harness, start *world.StepStarted, after ...world.EventData) (string, string) {
	t.Helper()
	h.reg.step("add", 1, addStep)
	h.reg.wf("one", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f := c.Step("add", mustJSON([2]int{1, 2}))
		c.Await(f.Done)
		r, _ := f.Result()
		return r, nil
	})
	runID := h.ids.New(world.PrefixRun)
	stepID := newDetSource(runID).id(world.PrefixStep)
	evs := []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "one", Input: mustJSON(nil)}},
		{Data: &world.RunStarted{}},
		{CorrelationID: stepID, Data: &world.StepCreated{StepName: "add", Input: mustJSON([2]int{1, 2})}},
		{CorrelationID: stepID, Data: start},
	}
	for _, d := range after {
		evs = append(evs, world.EventInput{CorrelationID: stepID, Data: d})
	}
	for _, ev := range evs {
		if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	return runID, stepID
}

// A continuation that finds a step running under another executor's lease
// (or waiting to retry) schedules a wake-up at the lease's expiry (or the
// retry) only when nothing else would take the step on: an attempt started
// inline by another invocation needs it; a queued attempt (its message
// comes back if its executor dies, a live one wakes the run, and a retry is
// queued again) does not.
func TestLeaseExpiryWakeOnlyForInlineAttempts(t *testing.T) {
	t.Parallel()
	// Both the lease's expiry (a minute after its step_started) and the
	// retry are at least a minute after began, however slow the machine.
	began := time.Now()
	retry := &world.StepRetrying{StepName: "add", Error: &world.ErrorData{Message: "again"}, RetryAfter: began.Add(time.Minute)}
	for _, tc := range []struct {
		name   string
		queued bool
		after  []world.EventData
		want   int
	}{
		{"inline attempt", false, nil, 1},
		{"queued attempt", true, nil, 0},
		// The same for a retry: the executor of a queued attempt queues the
		// step again for the retry's time.
		{"inline attempt retrying", false, []world.EventData{retry}, 1},
		{"queued attempt retrying", true, []world.EventData{retry}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
			runID, _ := oneStepRun(t, h, &world.StepStarted{StepName: "add", LeaseTTL: time.Minute, Queued: tc.queued}, tc.after...)
			if err := h.eng.Handle(context.Background(), world.Message{RunID: runID}); err != nil {
				t.Fatal(err)
			}
			got := mw.snapshot()
			if len(got) != tc.want {
				t.Fatalf("messages %+v, want %d", got, tc.want)
			}
			if tc.want == 1 && (got[0].NotBefore.Before(began.Add(time.Minute-time.Second)) || len(runrules.Steps(got[0])) != 0) {
				t.Fatalf("wake-up %+v, want a run message at the lease's expiry or the retry", got[0])
			}
		})
	}
}

// A background message delivered again after its executor recorded the
// step's outcome but died before waking the run still wakes it: without
// that, the run would wait for good.
func TestRedeliveredBackgroundStepWakesRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	runID, stepID := oneStepRun(t, h,
		&world.StepStarted{StepName: "add", LeaseTTL: time.Minute, Queued: true},
		&world.StepCompleted{StepName: "add", Result: mustJSON(3)})
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: stepID}); err != nil {
		t.Fatal(err)
	}
	run, err := h.w.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "3" {
		t.Fatalf("run %+v %v, want completed with 3", run, err)
	}
}

// releaseHook runs a function once, before the first run lease release
// (an executor committing while the holder still holds the lease), and
// counts forward reads of the log (a session's cold load).
type releaseHook struct {
	*msgWorld
	once     sync.Once
	before   func()
	forwards atomic.Int64
}

func (r *releaseHook) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	r.once.Do(r.before)
	return r.msgWorld.ReleaseRunLease(ctx, p)
}

func (r *releaseHook) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if !p.Pagination.Descending && p.Pagination.Cursor == "" {
		r.forwards.Add(1)
	}
	return r.msgWorld.ListEvents(ctx, p)
}

// A step completed by a background executor while the holder held the run
// lease (the executor leaves the run to it) is taken in by the holder after
// it releases the lease: it takes the lease again and goes on with the log
// it has, in the same invocation, with no message and no reload.
func TestHolderGoesOnWithWhatArrivedBeforeRelease(t *testing.T) {
	t.Parallel()
	var rh *releaseHook
	h := newHarness(t, func(lw *localworld.World) world.World { rh = &releaseHook{msgWorld: &msgWorld{World: lw}}; return rh }, Config{})
	runID, stepID := oneStepRun(t, h, &world.StepStarted{StepName: "add", LeaseTTL: time.Minute, Queued: true})
	rh.before = func() {
		if _, err := h.lw.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{
			{CorrelationID: stepID, Data: &world.StepCompleted{StepName: "add", Result: mustJSON(3)}},
		}}); err != nil {
			t.Error(err)
		}
	}
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID}); err != nil {
		t.Fatal(err)
	}
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "3" {
		t.Fatalf("run %+v %v, want completed with 3 by the same Handle", run, err)
	}
	if msgs := rh.snapshot(); len(msgs) != 0 {
		t.Errorf("messages %+v, want none", msgs)
	}
	if n := rh.forwards.Load(); n != 1 {
		t.Errorf("%d cold loads of the log, want 1", n)
	}
}
