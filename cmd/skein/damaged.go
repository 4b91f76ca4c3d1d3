package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// damaged turns the refusal of a write to a run whose stored data the
// World finds damaged (world.ErrCorrupt: a missing range of its log, a
// value that does not verify) into a message that says so, that nothing
// was written, and what to do; other errors are returned as they are.
func damaged(runID, what string, err error) error {
	if !errors.Is(err, world.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("run %s is damaged in the store, so it was not %s and nothing was written: %w\n"+
		"restore the missing items (a point-in-time restore of the table), then wake the run: skein runs retry %s",
		runID, what, err, runID)
}

// damagedHook is damaged for hooks resume, whose run may be unknown (the
// hook's token could not be read): the advice then names no run.
func damagedHook(token, runID string, err error) error {
	if runID != "" || !errors.Is(err, world.ErrCorrupt) {
		return damaged(runID, "resumed (hook "+strconv.Quote(token)+")", err)
	}
	return fmt.Errorf("the hook %q or its run is damaged in the store, so it was not resumed and nothing was written: %w\n"+
		"restore the missing items (a point-in-time restore of the table), then wake its run: skein runs retry <runId>",
		token, err)
}

// wakeRun sends a continuation of a live run, or of an ended run not yet
// at rest (runs retry of a run that is not held): after an operator
// restored the items a damaged run was missing, whose messages were
// dropped while it was damaged. It reads the
// run's log first, which the World checks: a run still damaged is the
// error damaged describes, and nothing is sent.
func wakeRun(ctx context.Context, e *env, r *world.Run) error {
	if _, err := engine.CheckedLastSeq(ctx, e.w, r.RunID); err != nil {
		return damaged(r.RunID, "woken", err)
	}
	if err := engine.Wake(ctx, e.w, time.Now, r.RunID, ""); err != nil {
		return err
	}
	if r.Status.Terminal() {
		fmt.Fprintf(e.stdout, "run %s (%s, not at rest) woken: the rest after its end finishes when a worker next runs on %s\n", r.RunID, r.Status, e.where())
		return nil
	}
	fmt.Fprintf(e.stdout, "run %s (%s) woken: it goes on when a worker next runs on %s\n", r.RunID, r.Status, e.where())
	return nil
}
