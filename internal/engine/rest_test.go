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

// waitRun polls a run until cond holds, for up to a minute (a bound for a
// busy machine: it only costs time when the condition never holds).
func (h *harness) waitRun(id, what string, cond func(*world.Run) bool) *world.Run {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
		if err != nil {
			h.t.Fatal(err)
		}
		if cond(r) {
			return r
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("run %s: timed out waiting for %s", id, what)
	return nil
}

// TestRestRaceOneDeactivation: steps running in several background
// executors when their run completes all record their results at once,
// and each executor then tries to deactivate the run: exactly one
// run_deactivated commits, after every result, and the run has exactly one
// terminal event.
func TestRestRaceOneDeactivation(t *testing.T) {
	t.Parallel()
	const n = 4
	h := newHarness(t, nil, Config{Options: Options{InlineConcurrency: 1}})
	var started sync.WaitGroup
	release := make(chan struct{})
	h.reg.step("gate", 0, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		started.Wait() // every slow step has started
		return mustJSON("open"), nil
	})
	h.reg.step("slow", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		started.Done()
		<-release
		return in, nil
	})
	h.reg.wf("race", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		g := c.Step("gate", nil)
		for i := range n {
			c.Step("slow", mustJSON(i))
		}
		c.Await(g.Done)
		return mustJSON("done"), nil
	})
	h.work(n+2, nil)
	for round := range 5 {
		started.Add(n)
		release = make(chan struct{})
		id := h.start("race", round)
		if r := h.wait(id); r.Status != world.RunStatusCompleted || r.Deactivated() {
			t.Fatalf("round %d: run %s deactivated %v; want completed, not yet deactivated", round, r.Status, r.Deactivated())
		}
		close(release)
		h.waitRun(id, "deactivation", (*world.Run).Deactivated)
		time.Sleep(50 * time.Millisecond) // let the losers try
		evs := h.events(id)
		if got := count(evs, world.EventRunDeactivated); got != 1 {
			t.Fatalf("round %d: %d run_deactivated", round, got)
		}
		if got := count(evs, world.EventRunCompleted) + count(evs, world.EventRunFailed) + count(evs, world.EventRunCancelled); got != 1 {
			t.Fatalf("round %d: %d terminal events", round, got)
		}
		if evs[len(evs)-1].Type() != world.EventRunDeactivated || count(evs, world.EventStepCompleted) != n+1 {
			t.Fatalf("round %d: log %s; want every step completed, then run_deactivated", round, describeTypes(evs))
		}
	}
}

func describeTypes(evs []world.Event) string {
	s := ""
	for _, e := range evs {
		s += " " + string(e.Type())
	}
	return s
}

// TestRestSafetyNet: the executor running a step after its run completed
// dies (its invocation is cut off) before the step records anything. The
// rest check it scheduled finds the step's lease expired, records the
// attempt as lost, and deactivates the run.
func TestRestSafetyNet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(lw *localworld.World) world.World { return lw }, Config{Options: Options{StepLeaseTTL: 300 * time.Millisecond}})
	h.reg.step("fast", 0, addStep)
	h.reg.step("stuck", 0, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.reg.wf("dies", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		c.Step("stuck", nil)
		f := c.Step("fast", mustJSON([2]int{1, 2}))
		c.Await(f.Done)
		return mustJSON("done"), nil
	})
	id := h.start("dies", nil)
	ctx, cut := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.eng.Handle(ctx, world.Message{RunID: id}) }()
	if r := h.wait(id); r.Status != world.RunStatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	cut() // the invocation dies with the step running
	<-done
	h.work(1, nil)
	r := h.waitRun(id, "the safety net's deactivation", (*world.Run).Deactivated)
	if r.Status != world.RunStatusCompleted {
		t.Fatalf("run %s after the safety net; want completed", r.Status)
	}
	p, err := h.lw.ListSteps(context.Background(), &world.ListStepsParams{RunID: id, Pagination: world.Pagination{Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Items {
		if st.StepName == "stuck" && (st.Status != world.StepStatusFailed || st.Error == nil || st.Error.Type != TypeExecutorLost) {
			t.Fatalf("stuck step: %s %+v; want failed, executor lost", st.Status, st.Error)
		}
	}
	if got := count(h.events(id), world.EventRunDeactivated); got != 1 {
		t.Fatalf("%d run_deactivated", got)
	}
}
