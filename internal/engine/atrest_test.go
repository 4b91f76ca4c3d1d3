package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// faultWorld is a msgWorld whose run leases or event reads fail on demand.
type faultWorld struct {
	*msgWorld
	leaseErr  error // AcquireRunLease fails with it
	eventsErr error // ListEvents fails with it
}

func (f *faultWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	if f.leaseErr != nil {
		return nil, f.leaseErr
	}
	return f.msgWorld.AcquireRunLease(ctx, p)
}

func (f *faultWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if f.eventsErr != nil {
		return nil, f.eventsErr
	}
	return f.msgWorld.ListEvents(ctx, p)
}

// keyErr stands for an encrypting World's missing key.
type keyErr struct{}

func (keyErr) Error() string { return "no key" }
func (keyErr) Is(target error) bool {
	return target == world.ErrKeyUnavailable
}

// A message of a run at rest (ended and deactivated) is acknowledged and
// dropped on every path that would otherwise send a message again: the
// continuation that finds the run lease held (a bounce), the
// continuation whose run's payloads the executor cannot open (sent back
// for another executor), and the step message whose run lease is in an
// unknown state (a continuation). Before, each path sent a message for the
// finished run, which the duplicates of a faulty queue kept circling.
func TestMessageOfRunAtRestIsNotSentAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// arrange prepares the fault and returns the message to deliver.
		arrange func(t *testing.T, f *faultWorld, runID, stepID string) world.Message
	}{
		{"lease busy", func(t *testing.T, f *faultWorld, runID, _ string) world.Message {
			hold(t, f, runID, "other-executor")
			return world.Message{RunID: runID}
		}},
		{"lease busy, hold retry", func(t *testing.T, f *faultWorld, runID, _ string) world.Message {
			hold(t, f, runID, "other-executor")
			return world.Message{RunID: runID, HoldAttempt: 2, Hop: 3}
		}},
		{"step message, lease unknown", func(t *testing.T, f *faultWorld, runID, stepID string) world.Message {
			f.leaseErr = errors.New("throttled")
			return world.Message{RunID: runID, StepID: stepID}
		}},
		{"key unavailable", func(t *testing.T, f *faultWorld, runID, _ string) world.Message {
			f.eventsErr = fmt.Errorf("open payload: %w", keyErr{})
			return world.Message{RunID: runID}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &faultWorld{}
			h := newHarness(t, func(lw *localworld.World) world.World { f.msgWorld = &msgWorld{World: lw}; return f }, Config{})
			runID, stepID := restingRun(t, h)
			msg := tc.arrange(t, f, runID, stepID)
			sent := len(f.snapshot())
			if err := h.eng.HandleDelivery(context.Background(), msg, 1); err != nil {
				t.Fatalf("delivery of %+v: %v, want it acknowledged", msg, err)
			}
			if got := f.snapshot()[sent:]; len(got) != 0 {
				t.Errorf("sent %+v for a run at rest, want nothing", got)
			}
		})
	}
}

// A run that has ended but is not at rest still gets its bounce: its rest
// (a step still running, compensations) may need the continuation.
func TestBounceOfEndedRunNotAtRestIsSent(t *testing.T) {
	t.Parallel()
	f := &faultWorld{}
	h := newHarness(t, func(lw *localworld.World) world.World { f.msgWorld = &msgWorld{World: lw}; return f }, Config{})
	ctx := context.Background()
	runID := h.ids.New(world.PrefixRun)
	stepID := h.ids.New(world.PrefixStep)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "one"}},
		{Data: &world.RunStarted{}},
		{CorrelationID: stepID, Data: &world.StepCreated{StepName: "s"}},
		{CorrelationID: stepID, Data: &world.StepStarted{StepName: "s", LeaseTTL: time.Hour}},
		{Data: &world.RunCompleted{}},
	}}); err != nil {
		t.Fatal(err)
	}
	hold(t, f, runID, "other-executor")
	sent := len(f.snapshot())
	if err := h.eng.HandleDelivery(ctx, world.Message{RunID: runID}, 1); err != nil {
		t.Fatal(err)
	}
	if got := f.snapshot()[sent:]; len(got) != 1 || got[0].RunID != runID || got[0].Hop != 1 {
		t.Errorf("sent %+v, want one bounce of the run", got)
	}
}

// restingRun runs a one-step workflow to its rest and returns its run's
// and step's IDs.
func restingRun(t *testing.T, h *harness) (runID, stepID string) {
	t.Helper()
	h.reg.step("s", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.wf("one", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("s", nil)
		c.Await(f.Done)
		res, _ := f.Result()
		return res, nil
	})
	runID = h.start("one", nil)
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID}); err != nil {
		t.Fatal(err)
	}
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != world.RunStatusCompleted || !run.Deactivated() {
		t.Fatalf("run %s deactivated %v, want completed and at rest", run.Status, run.Deactivated())
	}
	return runID, stepNamed(h.events(runID), "s")
}

// hold takes runID's run lease for owner, for a minute.
func hold(t *testing.T, w world.World, runID, owner string) {
	t.Helper()
	if _, err := w.AcquireRunLease(context.Background(), &world.RunLeaseParams{RunID: runID, Owner: owner, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// A message of a run at rest received a third time is still replaced, not
// dropped: run_deactivated may commit with the end, before the end's side
// effects (a child's parent notified), and the executor that committed it
// may have been killed in between; this message is then what runs them
// (TestChaosLambda: a parent stuck after its child's message was dropped).
func TestReplacementOfRunAtRestIsSent(t *testing.T) {
	t.Parallel()
	f := &faultWorld{}
	h := newHarness(t, func(lw *localworld.World) world.World { f.msgWorld = &msgWorld{World: lw}; return f }, Config{})
	runID, _ := restingRun(t, h)
	sent := len(f.snapshot())
	if err := h.eng.HandleDelivery(context.Background(), world.Message{RunID: runID}, 3); err != nil {
		t.Fatal(err)
	}
	if got := f.snapshot()[sent:]; len(got) != 1 || got[0].RunID != runID || got[0].Delivered != 3 {
		t.Errorf("sent %+v, want the message's replacement", got)
	}
}

// A child run at rest still gets its bounce: its end's side effect (its
// parent notified) may not have run yet when run_deactivated committed, and
// the lease's holder may be another delivery of this very message.
func TestBounceOfChildRunAtRestIsSent(t *testing.T) {
	t.Parallel()
	f := &faultWorld{}
	h := newHarness(t, func(lw *localworld.World) world.World { f.msgWorld = &msgWorld{World: lw}; return f }, Config{})
	ctx := context.Background()
	runID := h.ids.New(world.PrefixRun)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "child", ExecutionContext: mustJSON(ExecutionContext{NotifyToken: "parent-hook"})}},
		{Data: &world.RunStarted{}},
		{Data: &world.RunCompleted{}},
		{Data: &world.RunDeactivated{}},
	}}); err != nil {
		t.Fatal(err)
	}
	hold(t, f, runID, "other-executor")
	sent := len(f.snapshot())
	if err := h.eng.HandleDelivery(ctx, world.Message{RunID: runID}, 1); err != nil {
		t.Fatal(err)
	}
	if got := f.snapshot()[sent:]; len(got) != 1 || got[0].RunID != runID || got[0].Hop != 1 {
		t.Errorf("sent %+v, want one bounce of the child run", got)
	}
}
