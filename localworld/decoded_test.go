package localworld

import (
	"context"
	"errors"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestDecodedServesTheNextCommit: a serial step's commit reads back the
// run and the step the commit before wrote; it decodes neither again.
func TestDecodedServesTheNextCommit(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		step := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s"}), ev(step, &world.StepStarted{}))
		c := &w.s.decoded
		c.mu.Lock()
		hits, misses := c.hits, c.misses
		c.mu.Unlock()
		const n = 20
		for range n {
			next := testIDs.New(world.PrefixStep)
			mustAppend(t, w, runID, ev(step, &world.StepCompleted{Result: []byte(`1`)}),
				ev(next, &world.StepCreated{StepName: "s"}), ev(next, &world.StepStarted{}))
			step = next
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		// Each commit reads the run and step k (the commit before wrote
		// both), and step k+1 once created (this commit wrote it).
		if got := c.hits - hits; got != 3*n {
			t.Errorf("%d reads served, want %d", got, 3*n)
		}
		if got := c.misses - misses; got != 0 {
			t.Errorf("%d reads decoded, want 0", got)
		}
	})
}

// TestDecodedMissesARolledBackWrite: a commit refused after it wrote a
// step leaves the step as it was, and so does the next commit's read.
func TestDecodedMissesARolledBackWrite(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		step := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s"}))
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			ev(step, &world.StepStarted{}),
			ev(testIDs.New(world.PrefixStep), &world.StepCompleted{}), // no such step: refused
		}})
		if !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("commit with an unknown step: %v, want ErrNotFound", err)
		}
		res := mustAppend(t, w, runID, ev(step, &world.StepStarted{}))
		if st := res.Results[0].Step; st == nil || st.Status != world.StepStatusRunning || st.Attempt != 1 {
			t.Fatalf("step_started after the rolled-back one: %+v", st)
		}
	})
}
