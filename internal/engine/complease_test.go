package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestCompensationRenewsItsLease: a compensation whose body runs five step
// leases long (a slow refund, no timeout), run by an executor that holds no
// run lease (a background step's, recording its outcome after the run
// failed), keeps its lease while it runs, as a step does. The safety-net
// continuations its comp_started scheduled reach two consumers of another
// Engine on the same store while it runs: they find the lease live and
// leave it be. So its body runs once, uncancelled, recorded by one
// comp_started and one comp_succeeded, and the run is then deactivated.
func TestCompensationRenewsItsLease(t *testing.T) {
	t.Parallel()
	const lease, body = 300 * time.Millisecond, 1500 * time.Millisecond
	cfg := Config{RunPollInterval: 20 * time.Millisecond, Options: Options{StepLeaseTTL: lease}}
	h := newHarness(t, nil, cfg)
	h.reg.wf("saga", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	var calls, cancelled atomic.Int32
	h.reg.step("refund", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		select {
		case <-time.After(body):
			return nil, nil
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, ctx.Err()
		}
	})
	cfg.World, cfg.Registry = h.w, h.reg
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	ctx := context.Background()
	id, step := h.ids.New(world.PrefixRun), h.ids.New(world.PrefixStep)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "saga", Input: mustJSON("x"), Version: "v1"}}, {Data: &world.RunStarted{}},
		{CorrelationID: step, Data: &world.StepCreated{StepName: "charge", Compensation: "refund"}},
		{CorrelationID: step, Data: &world.StepStarted{StepName: "charge"}},
		{CorrelationID: step, Data: &world.StepCompleted{StepName: "charge", Result: mustJSON(1)}},
		{Data: &world.RunFailed{Error: &world.ErrorData{Message: "no"}, Compensate: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.eng.rest.deactivate(ctx, id) }()
	h.work(2, other)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := h.w.GetRun(ctx, &world.GetRunParams{RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if r.Deactivated() {
			if c := r.Compensations; c.Succeeded != 1 || c.Running != 0 || c.Owed != 0 {
				t.Errorf("compensations %+v, want one succeeded", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run not deactivated: %+v", r.Compensations)
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-done
	if n, m := calls.Load(), cancelled.Load(); n != 1 || m != 0 {
		t.Errorf("the compensation's body ran %d times (%d cancelled), want once, uncancelled", n, m)
	}
	evs := h.events(id)
	if n, m := count(evs, world.EventCompStarted), count(evs, world.EventCompSucceeded); n != 1 || m != 1 {
		t.Errorf("%d comp_started, %d comp_succeeded, want 1 each", n, m)
	}
}

// refusingCompRenewals is a World that has another executor's attempt of
// every compensation: it refuses their lease renewals.
type refusingCompRenewals struct {
	world.World
	refused atomic.Int32
}

func (w *refusingCompRenewals) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	if p.Compensation {
		w.refused.Add(1)
		return nil, world.ErrConflict
	}
	return w.World.RenewStepLease(ctx, p)
}

// TestCompensationLeaseLostCancelsItsBody: a compensation whose lease
// renewal is refused (another executor took the attempt over) has its
// body's context cancelled, as a step's, and records nothing: the attempt
// is the other executor's to record.
func TestCompensationLeaseLostCancelsItsBody(t *testing.T) {
	t.Parallel()
	var rw *refusingCompRenewals
	h := newHarness(t, func(lw *localworld.World) world.World {
		rw = &refusingCompRenewals{World: lw}
		return rw
	}, Config{RunPollInterval: 20 * time.Millisecond, Options: Options{StepLeaseTTL: 300 * time.Millisecond}})
	h.reg.wf("saga", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	cause := make(chan error, 1)
	h.reg.step("refund", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		select {
		case <-time.After(time.Minute): // far past the refused renewal
			cause <- nil
			return nil, nil
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	})
	ctx := context.Background()
	id, step := h.ids.New(world.PrefixRun), h.ids.New(world.PrefixStep)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "saga", Input: mustJSON("x"), Version: "v1"}}, {Data: &world.RunStarted{}},
		{CorrelationID: step, Data: &world.StepCreated{StepName: "charge", Compensation: "refund"}},
		{CorrelationID: step, Data: &world.StepStarted{StepName: "charge"}},
		{CorrelationID: step, Data: &world.StepCompleted{StepName: "charge", Result: mustJSON(1)}},
		{Data: &world.RunFailed{Error: &world.ErrorData{Message: "no"}, Compensate: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	h.eng.rest.deactivate(ctx, id)
	if err := <-cause; !errors.Is(err, errLeaseLost) {
		t.Fatalf("the body's context ended with %v after %v, want errLeaseLost", err, time.Since(began))
	}
	if rw.refused.Load() == 0 {
		t.Error("no compensation lease renewal was asked for")
	}
	evs := h.events(id)
	if n, m := count(evs, world.EventCompStarted), count(evs, world.EventCompSucceeded)+count(evs, world.EventCompRetryScheduled)+count(evs, world.EventCompFailed); n != 1 || m != 0 {
		t.Errorf("%d comp_started, %d outcomes, want 1 and none", n, m)
	}
}
