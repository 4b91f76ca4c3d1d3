package sdk_test

import (
	"context"
	"encoding/json"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// hookWakeDropper loses the first message that wakes a run after a hook
// payload, as an invocation killed between resuming the hook and waking
// its run would; and, as the claim such an invocation leaves on the
// message's idempotency key does on dynamoworld (for PendingGrace), it
// swallows every later message under that key as a duplicate.
type hookWakeDropper struct {
	*localworld.World
	dropped atomic.Bool
	done    chan struct{} // closed once the wake-up is dropped
	mu      sync.Mutex
	key     string
}

func (w *hookWakeDropper) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	w.mu.Lock()
	claimed := p.IdempotencyKey != "" && p.IdempotencyKey == w.key
	if !claimed && strings.HasPrefix(p.IdempotencyKey, "hook:") && w.dropped.CompareAndSwap(false, true) {
		w.key, claimed = p.IdempotencyKey, true
		close(w.done)
	}
	w.mu.Unlock()
	if claimed {
		return &world.EnqueueResult{Duplicate: true}, nil
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
	leaf := sdk.New("wakeLeaf", func(ctx sdk.Context, n int) (int, error) { return n + 1, nil })
	parent := sdk.New("wakeParent", func(ctx sdk.Context, n int) (int, error) {
		return leaf.Call(ctx, n)
	})
	dropper := &hookWakeDropper{done: make(chan struct{})}
	e := newEnvWith(t, envOptions{world: func(lw *localworld.World) world.World {
		dropper.World = lw
		return dropper
	}}, parent, leaf)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The child appends the outcome to the parent's log and then wakes
	// the parent: wait for the wake-up's drop, which comes after.
	select {
	case <-dropper.done:
	case <-ctx.Done():
		t.Fatalf("the parent's wake-up was never sent; log:\n%s", logTypes(e.events(run.ID())))
	}
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
	if outcome.RunID == "" {
		t.Fatalf("the outcome names no child (%+v); log:\n%s", outcome, logTypes(e.events(run.ID())))
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
// step until the parent has taken the child's outcome and gone on past it
// (its step orderAfter is recorded): the executor that started the child is
// slower than the child and the parent, or is lost.
type startRecordDelayer struct {
	*localworld.World
	lose    bool // the first executor's recording fails instead, as if it were lost
	mu      sync.Mutex
	delayed int
}

func (w *startRecordDelayer) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	for _, ev := range p.Events {
		if d, ok := ev.Data.(*world.StepCompleted); ok && d.StepName == "skein.start-child" {
			if n := w.delay(ctx, p.RunID); w.lose && n <= recordTries {
				return nil, context.DeadlineExceeded
			}
		}
	}
	return w.World.Append(ctx, p)
}

// recordTries is how many times a background executor tries to record a
// step's outcome before it gives the message up.
const recordTries = 3

// delay waits until run has recorded orderAfter (at most 5 s) and
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
				if d, ok := ev.Data.(*world.StepCompleted); ok && d.StepName == "orderAfter" {
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
// slower than the child, or its executor was lost). The parent goes on from
// the outcome (the log order of runs in flight is kept) but must not end
// before the start step is recorded, so that every step in its log
// completes exactly once.
func TestParentEndWaitsForChildStart(t *testing.T) {
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
			leaf := sdk.New("orderLeaf", func(ctx sdk.Context, n int) (int, error) { return n * 10, nil })
			first := sdk.NewStep("orderFirst", func(ctx context.Context, n int) (int, error) { return n, nil })
			after := sdk.NewStep("orderAfter", func(ctx context.Context, n int) (int, error) { return n + 1, nil })
			parent := sdk.New("orderParent", func(ctx sdk.Context, n int) (int, error) {
				f := first.Go(ctx, n) // takes the one inline slot: the start step is queued
				c := leaf.Go(ctx, n)
				v, err := c.Get(ctx)
				if err != nil {
					return 0, err
				}
				if v, err = after.Call(ctx, v); err != nil {
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
				// The start step goes to the queue at once, as on Lambda. A
				// lost start record is retried once the step's lease has
				// expired: 3s, which a live executor renews every second.
				engine: sdk.EngineOptions{InlineConcurrency: 1, StepLeaseTTL: 3 * time.Second}, knobs: []knobs.Option{knobs.WithBackgroundDelay(-1)},
			}, parent, leaf, first, after)
			ctx := e.ctx()
			run, err := parent.Start(ctx, e.client, 4)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := run.Result(ctx); err != nil || got != 45 {
				t.Fatalf("parent result %d, %v", got, err)
			}
			children, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "orderLeaf"})
			if err != nil || len(children.Runs) != 1 {
				t.Fatalf("child runs %+v, %v: want the one the first attempt started", children, err)
			}
			evs := e.events(run.ID())
			start := e.stepNamed(run.ID(), "skein.start-child").StepID
			completed, received, done := -1, -1, -1
			for i, ev := range evs {
				switch {
				case ev.Type() == world.EventStepCompleted && ev.CorrelationID == start:
					completed = i
				case ev.Type() == world.EventHookReceived:
					received = i
				case ev.Type() == world.EventRunCompleted:
					done = i
				}
			}
			if completed < 0 || completed > done {
				t.Fatalf("the start step completed at %d, the run at %d; log:\n%s", completed, done, logTypes(evs))
			}
			if received > completed {
				t.Errorf("the outcome (%d) arrived after the start step was recorded (%d): the test missed its case; log:\n%s", received, completed, logTypes(evs))
			}
			if n := countEvents(evs, world.EventStepCompleted); n != 3 {
				t.Errorf("%d step_completed, want 3; log:\n%s", n, logTypes(evs))
			}
		})
	}
}

// logTypes lists a log's event types and correlation IDs, one a line.
func logTypes(evs []world.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString("  " + string(ev.Type()) + " " + ev.CorrelationID)
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Queued {
			b.WriteString(" (queued)")
		}
		b.WriteString("\n")
	}
	return b.String()
}
