package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// twoSteps appends the log of a run of workflow "two" with its two "add"
// steps created and, when done, started by a background executor and
// completed, and returns the run and step IDs.
func twoSteps(t *testing.T, h *harness, done bool) (string, []string) {
	t.Helper()
	h.reg.step("add", 0, addStep)
	h.reg.wf("two", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f1, f2 := c.Step("add", mustJSON([2]int{1, 2})), c.Step("add", mustJSON([2]int{3, 4}))
		c.Await(func() bool { return f1.Done() && f2.Done() })
		return mustJSON("ok"), nil
	})
	runID := h.ids.New(world.PrefixRun)
	ids := newDetSource(runID)
	steps := []string{ids.id(world.PrefixStep), ids.id(world.PrefixStep)}
	evs := []world.EventInput{{Data: &world.RunCreated{WorkflowName: "two", Input: mustJSON(nil)}}, {Data: &world.RunStarted{}}}
	for i, s := range steps {
		evs = append(evs, world.EventInput{CorrelationID: s, Data: &world.StepCreated{StepName: "add", Input: mustJSON([2]int{2*i + 1, 2*i + 2})}})
	}
	for _, s := range steps {
		if !done {
			break
		}
		evs = append(evs,
			world.EventInput{CorrelationID: s, Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Minute, Queued: true}},
			world.EventInput{CorrelationID: s, Data: &world.StepCompleted{StepName: "add", Result: mustJSON(0)}})
	}
	for _, ev := range evs {
		if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	return runID, steps
}

// A step message whose executor finished its steps, took the run lease
// and died is delivered again (a duplicate, or its visibility ran out):
// the second delivery finds the steps done and the lease held by the dead
// executor. It must not just be acknowledged, which would delete the run's
// only message: it sends a continuation for just after the lease's expiry,
// and the run completes with nothing else to wake it. So does a delivery
// that found its steps ended while the lease is held under another message
// (a step a second delivery queued again while the first ran it, the first
// having then taken the lease and died). A delivery that runs its steps and
// finds the lease held under another message needs nothing (that message
// comes back if its holder dies): no message is sent.
func TestRedeliveryOfLeaseHoldersMessageCoversIt(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		group    bool // the message names both steps, or only the first
		sameMsg  bool // the dead holder took the lease under the delivered message
		done     bool // the steps completed before the delivery
		wantWake bool
	}{
		{"group, holder under this message", true, true, true, true},
		{"single step, holder under this message", false, true, true, true},
		{"group done, holder under another message", true, false, true, true},
		{"single step done, holder under another message", false, false, true, true},
		{"group run, holder under another message", true, false, false, false},
		{"single step run, holder under another message", false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
			runID, steps := twoSteps(t, h, tc.done)
			ctx := context.Background()
			msg := world.Message{RunID: runID, StepID: steps[0], RequestedAt: time.Now()}
			if tc.group {
				msg = world.Message{RunID: runID, StepIDs: steps, RequestedAt: time.Now()}
			}
			// The first delivery's executor took the run lease for msg,
			// then died: its lease runs out after ttl.
			dead, err := New(Config{World: h.w, Registry: h.reg, Options: Options{RunLeaseTTL: ttl}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(dead.Close)
			holderMsg := msg
			if !tc.sameMsg {
				holderMsg.RequestedAt = msg.RequestedAt.Add(-time.Second)
			}
			expires := time.Now().Add(ttl) // no later than the lease's expiry
			lease, err := dead.leases.acquireRunLease(ctx, runID, msgTag(holderMsg))
			if err != nil {
				t.Fatal(err)
			}
			if err := h.eng.HandleDelivery(ctx, msg, 2); err != nil {
				t.Fatalf("second delivery: %v", err)
			}
			if !tc.wantWake {
				if got := mw.snapshot(); len(got) != 0 {
					t.Fatalf("messages %+v, want none: the holder's own message covers it", got)
				}
				return
			}
			// Nothing else wakes the run: only what the delivery sent.
			h.work(1, nil)
			if run := h.wait(runID); run.Status != world.RunStatusCompleted {
				t.Fatalf("run %s %+v, want completed", run.Status, run.Error)
			}
			got := mw.snapshot()
			if len(got) != 1 || len(runrules.Steps(got[0])) != 0 || got[0].NotBefore.Before(expires) {
				t.Fatalf("messages %+v, want one continuation after %s's lease expiry (%s)", got, lease, expires)
			}
		})
	}
}

// takeOverOnRelease, at the first run lease release, appends events (an
// executor committing while the holder held the lease) and, once the lease
// is free, takes it for owner with a short TTL, as another delivery of the
// same message would before dying.
type takeOverOnRelease struct {
	*msgWorld
	once   sync.Once
	before func()
	owner  *world.RunLeaseParams
}

func (r *takeOverOnRelease) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	first := false
	r.once.Do(func() { first = true; r.before() })
	err := r.msgWorld.ReleaseRunLease(ctx, p)
	if first && err == nil {
		_, err = r.msgWorld.AcquireRunLease(ctx, r.owner)
	}
	return err
}

// A session that released the lease and must go on (a step completed while
// it held it) but finds the lease taken meanwhile under its own message (a
// second delivery of it, which then died) does not just return, which would
// acknowledge the message the taker relies on: it sends a continuation for
// the lease's expiry, and the run completes with nothing else to wake it.
func TestSessionFindingLeaseTakenUnderItsMessageCoversIt(t *testing.T) {
	t.Parallel()
	var tw *takeOverOnRelease
	h := newHarness(t, func(lw *localworld.World) world.World {
		tw = &takeOverOnRelease{msgWorld: &msgWorld{World: lw}}
		return tw
	}, Config{})
	runID, steps := twoSteps(t, h, false)
	ctx := context.Background()
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{CorrelationID: steps[1], Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Minute, Queued: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	msg := world.Message{RunID: runID, StepID: steps[0], RequestedAt: time.Now()}
	tw.owner = &world.RunLeaseParams{RunID: runID, Owner: "eng-dead-1" + ownerTagSep + msgTag(msg), TTL: 300 * time.Millisecond}
	tw.before = func() {
		if _, err := h.lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			{CorrelationID: steps[1], Data: &world.StepCompleted{StepName: "add", Result: mustJSON(7)}},
		}}); err != nil {
			t.Error(err)
		}
	}
	if err := h.eng.HandleDelivery(ctx, msg, 1); err != nil {
		t.Fatal(err)
	}
	h.work(1, nil)
	if run := h.wait(runID); run.Status != world.RunStatusCompleted {
		t.Fatalf("run %s %+v, want completed", run.Status, run.Error)
	}
	if got := tw.snapshot(); len(got) != 1 || len(runrules.Steps(got[0])) != 0 {
		t.Fatalf("messages %+v, want one continuation at the lease's expiry", got)
	}
}
