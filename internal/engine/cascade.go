package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// StartChildStep is the name of the built-in step that starts a child run
// from a parent workflow (Workflow.Call and Go in package workflow); its
// result is the child's run ID.
const StartChildStep = "skein.start-child"

// cancelChildren cancels the unfinished child runs of a cancelled run: the
// runs its skein.start-child steps started, as their results record them.
// Each child's own cancellation cancels its children in turn. It is
// idempotent: a child already ended is left as it is, and a child
// cancelled before is not cancelled again (its wake-up is deduplicated by
// key). A start step still running when the parent was cancelled may start
// its child afterwards: that child runs on (its parent's hook is gone, so
// nobody waits for it).
func (e *Engine) cancelChildren(ctx context.Context, runID string) {
	for cursor := ""; ; {
		page, err := e.w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			e.log.Warn("engine: list the steps of a cancelled run to cancel its children", "run", runID, "err", err)
			return
		}
		for i := range page.Items {
			st := &page.Items[i]
			if st.StepName != StartChildStep || st.Status != world.StepStatusCompleted {
				continue
			}
			var child string
			if json.Unmarshal(st.Output, &child) != nil || child == "" {
				continue
			}
			e.cancelChild(ctx, runID, child)
		}
		if !page.HasMore || len(page.Items) == 0 {
			return
		}
		cursor = page.Cursor
	}
}

// cancelChild cancels one child run of the cancelled run parent, unless it
// has ended.
func (e *Engine) cancelChild(ctx context.Context, parent, child string) {
	run, err := e.w.GetRun(ctx, &world.GetRunParams{RunID: child})
	switch {
	case errors.Is(err, world.ErrNotFound) || errors.Is(err, world.ErrGone):
		return
	case err != nil:
		e.log.Warn("engine: read a child of a cancelled run", "run", parent, "child", child, "err", err)
		return
	case run.Status.Terminal():
		return // ended, or cancelled before (and woken then)
	}
	_, err = e.appendFenced(ctx, &world.AppendParams{RunID: child, Events: []world.EventInput{
		{Data: &world.RunCancelled{Reason: fmt.Sprintf("parent run %s was cancelled", parent)}},
	}})
	if err != nil {
		if !errors.Is(err, world.ErrConflict) && !errors.Is(err, world.ErrGone) {
			e.log.Warn("engine: cancel a child of a cancelled run", "run", parent, "child", child, "err", err)
		}
		return
	}
	// The child's continuation runs the side effects of its end (its own
	// children, its streams).
	if err := Wake(ctx, e.w, e.now, child, CancelKey(child)); err != nil {
		e.log.Warn("engine: wake a cancelled child run", "run", parent, "child", child, "err", err)
	}
}
