package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

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
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{InlineConcurrency: 4})
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
		if ids := m.Steps(); len(ids) > 0 {
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
}

// A background executor that completes its step while the run lease is
// held sends no continuation (the holder wakes the run after releasing the
// lease); with the lease free it sends one.
func TestBackgroundStepWakesOnlyWithoutLeaseHolder(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	h.reg.step("add", 0, addStep)
	ctx := context.Background()
	runID := h.ids.New(world.PrefixRun)
	s1, s2 := h.ids.New(world.PrefixStep), h.ids.New(world.PrefixStep)
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
	if err := h.w.ReleaseRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: s2}); err != nil {
		t.Fatal(err)
	}
	got := mw.snapshot()
	if len(got) != 1 || got[0].RunID != runID || len(got[0].Steps()) != 0 {
		t.Fatalf("enqueued %+v, want one continuation", got)
	}
	// The probe released the lease it took.
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatalf("lease after the probe: %v", err)
	}
	if n := count(h.events(runID), world.EventStepCompleted); n != 2 {
		t.Fatalf("step_completed = %d", n)
	}
}
