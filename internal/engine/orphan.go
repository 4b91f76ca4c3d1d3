package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// ChildRunID is the run ID of the child run that the StartChildStep step
// stepID of run parent starts, or "" when stepID is no step ID. It is
// derived from both, so every attempt of the step creates the same run,
// and the parent's rest can find the child an attempt created before its
// executor was lost (cancelOrphans). Its time is the step ID's, which is
// the parent's (correlation IDs carry their run's time).
//
// Starting a run is two writes (run_created, then its first message), and
// an attempt may die between them; the next attempt finds the run and wakes
// it. When no attempt follows (the step failed: STEP_EXECUTOR_LOST, or a
// fatal error), the child would wait, pending, for a message that never
// comes.
func ChildRunID(parent, stepID string) string {
	t, err := idTime(stepID)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte("skein/child-run/" + parent + "/" + stepID))
	id, err := ulid.New(ulid.Timestamp(t), bytes.NewReader(sum[:10]))
	if err != nil {
		return ""
	}
	return world.PrefixRun + id.String()
}

// cancelOrphans cancels the children that the failed StartChildStep steps
// (starts) of the finished run parent created and that never started: the
// parent was told the start failed, so nothing waits for such a child, and
// its first message may never have been sent. A child that has started is
// left to run on, as a child whose start step was still running when its
// parent ended is (cancelChildren). It returns the first error that leaves
// a child unchecked; the caller then does not put the parent at rest, and
// checks again later.
func (rs *rest) cancelOrphans(ctx context.Context, parent string, starts []string) error {
	for _, stepID := range starts {
		child := ChildRunID(parent, stepID)
		if child == "" {
			continue
		}
		run, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: child})
		switch {
		case errors.Is(err, world.ErrNotFound), errors.Is(err, world.ErrGone):
			continue // never created (or created by a version before ChildRunID)
		case err != nil:
			return fmt.Errorf("engine: read child run %s of a failed start: %w", child, err)
		case run.Status != world.RunStatusPending:
			continue
		}
		cancelled, err := rs.cancelPending(ctx, parent, run)
		if err != nil {
			return err
		}
		if !cancelled {
			continue // started, or ended, meanwhile
		}
		rs.log.Warn("engine: cancelled a child run its parent could not start", "run", parent, "child", child, "step", stepID)
		// Its continuation runs the side effects of its end, as for any
		// cancelled run.
		if err := Wake(ctx, rs.w, rs.now, child, CancelKey(child)); err != nil {
			rs.log.Warn("engine: wake a cancelled child run", "run", parent, "child", child, "err", err)
		}
	}
	return nil
}

// cancelPending appends run_cancelled to run, a pending child of parent,
// fenced on the log as run was read: a child that has moved on since
// (started by its first message) is left as it is, and false returned.
func (rs *rest) cancelPending(ctx context.Context, parent string, run *world.Run) (bool, error) {
	if err := leaseLost(ctx); err != nil {
		return false, err
	}
	last, err := CheckedLastSeq(ctx, rs.w, run.RunID)
	if err != nil || last != run.LastSeq {
		return false, err
	}
	res, err := rs.w.Append(ctx, &world.AppendParams{RunID: run.RunID, IfLastSeq: last, Events: []world.EventInput{
		{Data: &world.RunCancelled{Reason: fmt.Sprintf("parent run %s could not start it: its step %s failed", parent, StartChildStep)}},
	}})
	switch {
	case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrGone):
		return false, nil // moved on, or ended
	case err != nil:
		return false, fmt.Errorf("engine: cancel child run %s of a failed start: %w", run.RunID, err)
	}
	ObserveCommit(ctx, rs.log, rs.cfg.Metrics, res)
	return true, nil
}
