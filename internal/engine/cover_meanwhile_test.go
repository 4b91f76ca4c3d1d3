package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// staleSteps answers each step's first read as the step was before its
// executor recorded it (running), as a delivery on a starved machine reads
// it just before another delivery of the same message records it.
type staleSteps struct {
	*msgWorld
	mu   sync.Mutex
	read map[string]bool
}

func (s *staleSteps) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	st, err := s.msgWorld.GetStep(ctx, p)
	if err != nil {
		return st, err
	}
	s.mu.Lock()
	first := !s.read[p.StepID]
	s.read[p.StepID] = true
	s.mu.Unlock()
	if first && st.Status.Terminal() {
		c := *st
		c.Status = world.StepStatusRunning
		return &c, nil
	}
	return st, nil
}

// A second delivery of a step message reads its steps running, and by the
// time it starts them the first delivery's executor has recorded them,
// taken the run lease and died (TestChaosLambda under load: a run stuck
// running, its inline step started by the dead holder, no message left).
// Its refused step_started must wake the run as a step found ended does
// (a continuation after the holder's lease), not just be acknowledged,
// which deleted the run's only message.
func TestDeliveryFindingStepsEndedMeanwhileCoversHolder(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	for _, group := range []bool{true, false} {
		t.Run(map[bool]string{true: "group", false: "single step"}[group], func(t *testing.T) {
			t.Parallel()
			var sw *staleSteps
			h := newHarness(t, func(lw *localworld.World) world.World {
				sw = &staleSteps{msgWorld: &msgWorld{World: lw}, read: map[string]bool{}}
				return sw
			}, Config{})
			runID, steps := twoSteps(t, h, true)
			ctx := context.Background()
			msg := world.Message{RunID: runID, StepID: steps[0], RequestedAt: time.Now()}
			if group {
				msg = world.Message{RunID: runID, StepIDs: steps, RequestedAt: time.Now()}
			}
			dead, err := New(Config{World: h.w, Registry: h.reg, Options: Options{RunLeaseTTL: ttl}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(dead.Close)
			expires := time.Now().Add(ttl) // no later than the lease's expiry
			if _, err := dead.leases.acquireRunLease(ctx, runID, msgTag(msg)); err != nil {
				t.Fatal(err)
			}
			if err := h.eng.HandleDelivery(ctx, msg, 2); err != nil {
				t.Fatalf("second delivery: %v", err)
			}
			got := sw.snapshot()
			if len(got) != 1 || len(runrules.Steps(got[0])) != 0 || got[0].NotBefore.Before(expires) {
				t.Fatalf("messages %+v, want one continuation after the dead holder's lease expiry (%s)", got, expires)
			}
			h.work(1, nil)
			if run := h.wait(runID); run.Status != world.RunStatusCompleted {
				t.Fatalf("run %s %+v, want completed", run.Status, run.Error)
			}
		})
	}
}
