package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// childWakeLoser loses the first message of every run of one workflow, as
// an executor of the parent's start step lost between creating the child
// and waking it would: the step then fails (here at once, with a fatal
// error; under load, after its executor was lost too often), and no attempt
// follows to wake the child.
type childWakeLoser struct {
	*localworld.World
	workflow string
}

func (w *childWakeLoser) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	if m, err := world.DecodeMessage(p.Body); err == nil && strings.HasPrefix(p.IdempotencyKey, "start:") {
		if run, err := w.GetRun(ctx, &world.GetRunParams{RunID: m.RunID}); err == nil && run.WorkflowName == w.workflow {
			return nil, sdk.Fatal(errors.New("test: the executor was lost before the child's first message was sent"))
		}
	}
	return w.World.Enqueue(ctx, p)
}

// A child created by a start step that then failed never got its first
// message: it waited pending for good (TestChaosLambda's children with only
// run_created in their log, whose parents failed STEP_EXECUTOR_LOST on the
// start step). The parent, told the start failed, does not wait for it, so
// its rest cancels it before the parent is at rest.
func TestChildOfFailedStartCancelled(t *testing.T) {
	t.Parallel()
	leaf := sdk.New("orphanLeaf", func(ctx sdk.Context, n int) (int, error) { return n, nil })
	parent := sdk.New("orphanParent", func(ctx sdk.Context, n int) (int, error) {
		return leaf.Call(ctx, n)
	})
	e := newEnvWith(t, envOptions{world: func(lw *localworld.World) world.World {
		return &childWakeLoser{World: lw, workflow: leaf.Name()}
	}}, parent, leaf)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err == nil {
		t.Fatal("the parent completed: the child's first message was not lost")
	}
	e.waitEvent(run.ID(), world.EventRunDeactivated)
	page, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: leaf.Name(), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Fatalf("%d runs of %s, want the one child", len(page.Runs), leaf.Name())
	}
	child := page.Runs[0]
	if child.Status != world.RunStatusCancelled {
		t.Fatalf("child %s of the failed start is %s once its parent is at rest, want cancelled", child.ID, child.Status)
	}
	if got := e.stepNamed(run.ID(), "skein.start-child"); got.Status != world.StepStatusFailed {
		t.Fatalf("start step %s, want failed", got.Status)
	}
}
