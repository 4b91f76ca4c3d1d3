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
func (rs *rest) cancelChildren(ctx context.Context, runID string) {
	for cursor := ""; ; {
		page, err := rs.w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			rs.log.Warn("engine: list the steps of a cancelled run to cancel its children", "run", runID, "err", err)
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
			rs.cancelChild(ctx, runID, child)
		}
		if !page.HasMore || len(page.Items) == 0 {
			return
		}
		cursor = page.Cursor
	}
}

// cancelChild cancels one child run of the cancelled run parent, unless it
// has ended.
func (rs *rest) cancelChild(ctx context.Context, parent, child string) {
	run, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: child})
	switch {
	case errors.Is(err, world.ErrNotFound) || errors.Is(err, world.ErrGone):
		return
	case err != nil:
		rs.log.Warn("engine: read a child of a cancelled run", "run", parent, "child", child, "err", err)
		return
	case run.Status.Terminal():
		return // ended, or cancelled before (and woken then)
	}
	_, err = rs.appendFenced(ctx, &world.AppendParams{RunID: child, Events: []world.EventInput{
		{Data: &world.RunCancelled{Reason: fmt.Sprintf("parent run %s was cancelled", parent)}},
	}})
	if err != nil {
		if !errors.Is(err, world.ErrConflict) && !errors.Is(err, world.ErrGone) {
			rs.log.Warn("engine: cancel a child of a cancelled run", "run", parent, "child", child, "err", err)
		}
		return
	}
	// The child's continuation runs the side effects of its end (its own
	// children, its streams).
	if err := Wake(ctx, rs.w, rs.now, child, CancelKey(child)); err != nil {
		rs.log.Warn("engine: wake a cancelled child run", "run", parent, "child", child, "err", err)
	}
}

// afterTerminal runs the side effects a finished run's terminal event
// justifies, once it has committed: its streams are closed (unless
// compensations are to run, which may write to them: then at rest, see
// deactivate), a cancelled
// run's unfinished children are cancelled (cancelChildren) and, for a child
// run, the parent's hook is resumed with the outcome and the parent woken.
// All are idempotent, so a continuation that finds the run finished simply
// runs them again: one whose first invocation died after resuming the
// parent's hook and before waking the parent wakes it now, under the key
// of the first wake-up (a second hook_received is not appended). When the
// caller knows the run's execution context (known), a run that is no child
// costs no read of the run.
func (rs *rest) afterTerminal(ctx context.Context, runID string, execCtx json.RawMessage, known bool, status world.RunStatus) {
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, sideEffectTimeout)
	defer cancel()
	if status == world.RunStatusCancelled {
		rs.cancelChildren(ctx, runID)
	}
	var run *world.Run
	if status != world.RunStatusCompleted {
		// A failed or cancelled run may owe compensations, whose steps may
		// write to its streams: those close when it is at rest.
		r, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			rs.log.Warn("engine: read finished run", "run", runID, "err", err)
		}
		run = r
	}
	if run == nil || !compWork(run) {
		rs.closeStreams(ctx, runID)
	}
	if known && !notifies(execCtx) {
		return
	}
	if run == nil {
		r, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			return
		}
		run = r
	}
	if !notifies(run.ExecutionContext) {
		return
	}
	var ec ExecutionContext
	_ = json.Unmarshal(run.ExecutionContext, &ec)
	if done, parent, received := rs.notified(ctx, ec); done {
		if received != "" {
			// The outcome was delivered before, by an executor that may
			// have died between delivering it and waking the parent: wake
			// it again, under no idempotency key, which that executor may
			// have claimed without sending (a claim suppresses its key's
			// messages for a while). A redundant wake-up is harmless.
			rs.wakeParent(ctx, runID, parent)
		}
		return
	}
	out, err := json.Marshal(RunOutcome{RunID: runID, Status: run.Status, Output: run.Output, Error: run.Error, ErrorCode: run.ErrorCode})
	if err != nil {
		return
	}
	if _, err := ResumeHook(ctx, rs.w, rs.now, ec.NotifyToken, out); err != nil && !errors.Is(err, world.ErrNotFound) {
		rs.log.Warn("engine: notify parent run", "run", runID, "parent", ec.ParentRunID, "err", err)
	}
}

// notified reports whether the parent no longer needs the outcome (done):
// its hook is gone (disposed, or the parent ended), or it already received
// the outcome from an earlier invocation, whose hook_received event is then
// received, in the parent run's log. A failed read is not done: the caller
// delivers the outcome, which the hook's run may then refuse.
func (rs *rest) notified(ctx context.Context, ec ExecutionContext) (done bool, parent, received string) {
	h, err := rs.w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: ec.NotifyToken})
	if err != nil {
		return errors.Is(err, world.ErrNotFound), "", ""
	}
	p, err := rs.w.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{RunID: h.RunID, CorrelationID: h.HookID})
	if err != nil {
		return false, "", ""
	}
	for _, ev := range p.Items {
		if ev.Type() == world.EventHookReceived {
			return true, h.RunID, ev.EventID
		}
	}
	return false, "", ""
}

// wakeParent wakes again the parent run whose hook received a child's
// outcome: the invocation that delivered the outcome may have died before
// the wake-up was sent, and without it the parent would wait for good. It
// uses no idempotency key: the first wake-up's key may be claimed by that
// dead invocation, and a claim suppresses its key's messages for a while
// (dynamoworld's PendingGrace). A redundant wake-up finds the parent with
// nothing new to do.
func (rs *rest) wakeParent(ctx context.Context, runID, parent string) {
	if err := Wake(ctx, rs.w, rs.now, parent, ""); err != nil {
		rs.log.Warn("engine: wake parent run", "run", runID, "parent", parent, "err", err)
	}
}

// closeStreams closes every stream of a finished run. Closing is
// idempotent; a failure is logged, and the run's rest closes them again.
func (rs *rest) closeStreams(ctx context.Context, runID string) {
	names, err := rs.w.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
	if err != nil {
		rs.log.Warn("engine: list streams of finished run", "run", runID, "err", err)
	}
	for _, name := range names {
		if err := rs.w.CloseStream(ctx, &world.CloseStreamParams{RunID: runID, Name: name}); err != nil {
			rs.log.Warn("engine: close stream of finished run", "run", runID, "stream", name, "err", err)
		}
	}
}
