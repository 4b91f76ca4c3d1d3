package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestCompensateRestRacing: several executors compensating a failed run's
// steps at once (duplicate deliveries, a background step's executor and
// the session) record each compensation once: the World's lease on a
// compensating step turns the others away, and they leave it to a
// continuation. Each compensation's body runs once, most recently
// completed step first, and the run is deactivated once both have ended.
func TestCompensateRestRacing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Options: Options{StepLeaseTTL: 500 * time.Millisecond}})
	h.reg.wf("saga", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	var mu sync.Mutex
	var order []string
	var calls atomic.Int32
	h.reg.step("refund", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		time.Sleep(20 * time.Millisecond)
		var c compInput
		_ = json.Unmarshal(in, &c)
		mu.Lock()
		order = append(order, string(c.Result))
		mu.Unlock()
		return nil, nil
	})
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	events := []world.EventInput{{Data: &world.RunCreated{WorkflowName: "saga", Input: mustJSON("x"), Version: "v1"}}, {Data: &world.RunStarted{}}}
	for _, n := range []int{1, 2} {
		step := h.ids.New(world.PrefixStep)
		events = append(events,
			world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "charge", Compensation: "refund"}},
			world.EventInput{CorrelationID: step, Data: &world.StepStarted{StepName: "charge"}},
			world.EventInput{CorrelationID: step, Data: &world.StepCompleted{StepName: "charge", Result: mustJSON(n)}})
	}
	events = append(events, world.EventInput{Data: &world.RunFailed{Error: &world.ErrorData{Message: "no"}, Compensate: true}})
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: events}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { h.eng.rest.deactivate(ctx, id) })
	}
	wg.Wait()
	h.work(2, nil) // the continuations the turned-away executors left
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := h.w.GetRun(ctx, &world.GetRunParams{RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if r.Deactivated() {
			if c := r.Compensations; c.Succeeded != 2 || c.Running != 0 || c.Owed != 0 {
				t.Errorf("compensations %+v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run not deactivated: %+v", r.Compensations)
		}
		time.Sleep(5 * time.Millisecond)
	}
	evs := h.events(id)
	if n, m := count(evs, world.EventCompStarted), count(evs, world.EventCompSucceeded); n != 2 || m != 2 {
		t.Errorf("%d comp_started, %d comp_succeeded, want 2 each", n, m)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls.Load() != 2 || len(order) != 2 || order[0] != "2" || order[1] != "1" {
		t.Errorf("compensation bodies ran %d times, in order %q, want once each, 2 then 1", calls.Load(), order)
	}
}
