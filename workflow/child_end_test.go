package workflow_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// hookWakeDropper loses the first message that wakes a run after a hook
// payload, as an invocation killed between resuming the hook and waking
// its run would.
type hookWakeDropper struct {
	*localworld.World
	dropped atomic.Bool
}

func (w *hookWakeDropper) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	if strings.HasPrefix(p.IdempotencyKey, "hook:") && w.dropped.CompareAndSwap(false, true) {
		return &world.EnqueueResult{}, nil
	}
	return w.World.Enqueue(ctx, p)
}

// A child whose last invocation dies after it delivered its outcome to the
// parent's hook and before it woke the parent leaves the parent waiting
// with the outcome in its log. The child's message, delivered again, finds
// the child ended: it must wake the parent (and not deliver the outcome a
// second time), so that the parent completes.
func TestChildEndWakesParentAgain(t *testing.T) {
	t.Parallel()
	leaf := workflow.New("wakeLeaf", func(ctx workflow.Context, n int) (int, error) { return n + 1, nil })
	parent := workflow.New("wakeParent", func(ctx workflow.Context, n int) (int, error) {
		return leaf.Call(ctx, n)
	})
	dropper := &hookWakeDropper{}
	e := newEnvWith(t, envOptions{world: func(lw *localworld.World) world.World {
		dropper.World = lw
		return dropper
	}}, parent, leaf)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventHookReceived)
	var outcome struct {
		RunID string `json:"runId"`
	}
	for _, ev := range e.events(run.ID()) {
		if d, ok := ev.Data.(*world.HookReceived); ok {
			if err := json.Unmarshal(d.Payload, &outcome); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !dropper.dropped.Load() || outcome.RunID == "" {
		t.Fatalf("the parent's wake-up was not dropped (%v) or the outcome names no child (%+v)", dropper.dropped.Load(), outcome)
	}
	// The child's message again, as the queue redelivers it.
	body, err := world.EncodeMessage(world.Message{RunID: outcome.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lw.Enqueue(ctx, &world.EnqueueParams{Body: body}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := run.Result(wctx); err != nil || got != 2 {
		t.Fatalf("parent result %d, %v; log:\n%s", got, err, logTypes(e.events(run.ID())))
	}
	if n := countEvents(e.events(run.ID()), world.EventHookReceived); n != 1 {
		t.Errorf("the parent received %d outcomes, want 1", n)
	}
}

// startRecordDelayer holds back the recording of every skein.start-child
// step until the parent's log has the child's outcome: the executor that
// started the child is slower than the child, or is lost.
type startRecordDelayer struct {
	*localworld.World
	lose    bool // the first recording fails instead, as a lost executor's
	mu      sync.Mutex
	delayed int
}

func (w *startRecordDelayer) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	for _, ev := range p.Events {
		if d, ok := ev.Data.(*world.StepCompleted); ok && d.StepName == "skein.start-child" {
			if n := w.delay(ctx, p.RunID); w.lose && n == 1 {
				return nil, context.DeadlineExceeded
			}
		}
	}
	return w.World.Append(ctx, p)
}

// delay waits until run has a hook_received event (at most 5 s) and
// returns how many recordings it delayed.
func (w *startRecordDelayer) delay(ctx context.Context, runID string) int {
	w.mu.Lock()
	w.delayed++
	n := w.delayed
	w.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		evs, err := w.World.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 1000}})
		if err == nil {
			for _, ev := range evs.Items {
				if ev.Type() == world.EventHookReceived {
					time.Sleep(100 * time.Millisecond) // the parent's continuation goes first
					return n
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

// A child can end and deliver its outcome before the step that started it
// is recorded in the parent's log (that step ran in the background and was
// slower than the child, or its executor was lost). The parent must not go
// on from the outcome alone: it completes only once the start step is
// recorded, so that every step in its log completes exactly once.
func TestChildOutcomeWaitsForStartStep(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		lose bool
	}{
		{name: "slow"},
		{name: "lost", lose: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			leaf := workflow.New("orderLeaf", func(ctx workflow.Context, n int) (int, error) { return n * 10, nil })
			first := workflow.NewStep("orderFirst", func(ctx context.Context, n int) (int, error) { return n, nil })
			parent := workflow.New("orderParent", func(ctx workflow.Context, n int) (int, error) {
				f := first.Go(ctx, n) // takes the one inline slot: the start step is queued
				c := leaf.Go(ctx, n)
				v, err := c.Get(ctx)
				if err != nil {
					return 0, err
				}
				w, err := f.Get(ctx)
				return v + w, err
			})
			delayer := &startRecordDelayer{lose: tc.lose}
			e := newEnvWith(t, envOptions{
				world: func(lw *localworld.World) world.World {
					delayer.World = lw
					return delayer
				},
				engine: workflow.EngineOptions{InlineConcurrency: 1, StepLeaseTTL: 300 * time.Millisecond},
			}, parent, leaf, first)
			ctx := e.ctx()
			run, err := parent.Start(ctx, e.client, 4)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := run.Result(ctx); err != nil || got != 44 {
				t.Fatalf("parent result %d, %v", got, err)
			}
			evs := e.events(run.ID())
			start := e.stepNamed(run.ID(), "skein.start-child").StepID
			completed, done := -1, -1
			for i, ev := range evs {
				switch {
				case ev.Type() == world.EventStepCompleted && ev.CorrelationID == start:
					completed = i
				case ev.Type() == world.EventRunCompleted:
					done = i
				}
			}
			if completed < 0 || completed > done {
				t.Fatalf("the start step completed at %d, the run at %d; log:\n%s", completed, done, logTypes(evs))
			}
			if n := countEvents(evs, world.EventStepCompleted); n != 2 {
				t.Errorf("%d step_completed, want 2; log:\n%s", n, logTypes(evs))
			}
		})
	}
}

// logTypes lists a log's event types and correlation IDs, one a line.
func logTypes(evs []world.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString("  " + string(ev.Type()) + " " + ev.CorrelationID + "\n")
	}
	return b.String()
}
