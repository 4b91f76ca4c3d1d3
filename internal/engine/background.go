package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// Background deliveries: a message naming one step runs it here (a group
// of several runs in group.go), records its outcome and takes its run on
// (wakeAfterStep).

// background runs the steps a message names, outside any session: each
// attempt by the step runner, its outcome recorded, and then the run
// taken on under its lease (runLeases) or left to the lease's holder.
type background struct {
	*parts
	leases *runLeases
	// settle lets a group's steps still running finish (gather): nil is
	// runtime.Gosched; a test sets it to release its steps and wait for
	// their outcomes (len(results) == left).
	settle func(results <-chan outcome, left int)
}

// executeBackground executes the steps a message names (steps queued
// because the invocation that created them had no inline capacity, or a
// retry), records their outcomes and takes their run on (wakeAfterStep). A
// message naming several is executed as a group (executeGroup).
//
// The run lease it takes is owned under msg's tag (msgTag), so that another
// delivery of the same message can tell it holds the lease (coverHolder).
func (bg *background) executeBackground(ctx context.Context, msg world.Message) error {
	ids, tag := runrules.Steps(msg), msgTag(msg)
	if len(ids) > 1 {
		return bg.executeGroup(ctx, msg.RunID, ids, tag)
	}
	key, late, err := bg.executeStep(ctx, msg.RunID, ids[0])
	if err != nil || key == "" {
		return err
	}
	return bg.wakeAfterStep(ctx, msg.RunID, key, delivery{tag: tag, late: late})
}

// executeStep executes one background step and records its outcome. It
// returns the idempotency key of the continuation the outcome needs (empty
// when none: the step is owned elsewhere, the run ended, or the step
// retries, for which it enqueues the step again), and late when the step
// had ended before this delivery (see delivery).
func (bg *background) executeStep(ctx context.Context, runID, stepID string) (key string, late bool, err error) {
	st, err := bg.w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil {
		if errors.Is(err, world.ErrNotFound) {
			return "", false, &PermanentError{Reason: fmt.Sprintf("step %s of run %s not found", stepID, runID), Err: err}
		}
		return "", false, err
	}
	if st.Status.Terminal() {
		// Recorded already: by this message's first delivery, whose
		// executor may have died before it woke the run, or by another
		// executor. Waking the run again is harmless; not waking it could
		// leave the run waiting for good. The delivery is late (see
		// delivery) only when a queue executor ran the step: one a session
		// ran inline (a later session takes up queued steps whose messages
		// have not arrived yet) leaves no message of this one's to cover.
		return keyDone(stepID, st.Attempt), bg.queuedAttempt(ctx, runID, stepID, st.Attempt), nil
	}
	run, err := bg.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return "", false, err
	}
	if run.Status.Terminal() {
		return "", false, nil
	}
	if err := sealedWithoutKey(runID, run.Input, run.ExecutionContext); err != nil {
		return "", false, err // never run a step on an envelope
	}
	if !bg.registered(st.StepName) {
		// Not run nor failed: the run's session holds the run.
		return keyUnregistered(stepID, st.Attempt), false, nil
	}
	res, err := bg.append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{CorrelationID: stepID, Data: &world.StepStarted{StepName: st.StepName, LeaseTTL: bg.cfg.StepLeaseTTL, Queued: true}},
	}})
	if err != nil {
		switch requeued, rerr := bg.requeueRefusedStart(ctx, runID, stepID, err); {
		case requeued:
			return "", false, rerr
		case errors.Is(err, world.ErrConflict):
			return bg.endedMeanwhile(ctx, runID, stepID)
		case errors.Is(err, world.ErrGone):
			return "", false, nil // the run has ended
		case errors.Is(err, world.ErrNotFound):
			return "", false, &PermanentError{Reason: "step " + stepID + " not found", Err: err}
		}
		return "", false, err
	}
	meta := runMeta{
		runID: run.RunID, workflowName: run.WorkflowName, input: run.Input,
		execCtx: run.ExecutionContext, createdAt: run.CreatedAt,
	}
	x := execOf(meta, res.Results[0].Step, st.Input)
	o := bg.steps.runStep(ctx, x)
	if o.kind == outAbandoned {
		return "", false, ctx.Err()
	}
	o, ended, err := bg.steps.recordFinal(ctx, runID, o)
	if err != nil {
		return "", false, err
	}
	if ended {
		// Recorded after the run's end: whoever ended it ran the end's
		// side effects; what is left is to deactivate it once this was the
		// last step running.
		bg.rest.deactivate(ctx, runID)
		return "", false, nil
	}
	if o.kind == outRetrying {
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: o.retryAfter}
		return "", false, bg.enqueue(ctx, m, keyStep(stepID, o.attempt))
	}
	return keyDone(stepID, o.attempt), false, nil
}

// endedMeanwhile is what a delivery whose step_started was refused as a
// conflict does: the step ended between its read and its start (its
// executor, another delivery of the same message on a slow machine,
// recorded it meanwhile, and may have taken the run lease and died). It
// wakes the run as for a step found ended at the read (executeStep): just
// acknowledging the message could delete the run's only one.
func (bg *background) endedMeanwhile(ctx context.Context, runID, stepID string) (key string, late bool, err error) {
	st, err := bg.w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	switch {
	case err != nil:
		return "", false, err // the message comes back
	case !st.Status.Terminal():
		return "", false, nil
	}
	return keyDone(stepID, st.Attempt), bg.queuedAttempt(ctx, runID, stepID, st.Attempt), nil
}

// requeueRefusedStart queues a background step again when its step_started
// was refused for now: not yet due (a retry's time), or running under the
// live lease of a queued attempt. That lease may be held by an executor
// that is still running the step (a duplicate delivery), whose outcome
// will make the new message find the step ended, or by one that died: this
// delivery is then the one that runs the step again, so it must not be
// dropped (nobody watches a queued attempt's lease, see schedule.next).
// An attempt an invocation runs inline needs nothing from it. It reports
// whether err was such a refusal.
func (bg *background) requeueRefusedStart(ctx context.Context, runID, stepID string, err error) (bool, error) {
	return bg.requeueUnstarted(ctx, runID, stepID, refusalOf(err))
}

// requeueUnstarted is requeueRefusedStart for the refusal re.
func (bg *background) requeueUnstarted(ctx context.Context, runID, stepID string, re *world.RefusalError) (bool, error) {
	switch {
	case tooEarly(re):
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: re.Until}
		return true, bg.enqueue(ctx, m, keyStepEarly(stepID, re.Until))
	case stepLeased(re):
		if !bg.queuedAttempt(ctx, runID, stepID, re.Attempt) {
			// An invocation runs it inline: should it die, its run's
			// next session takes the step on at the lease's expiry.
			return true, nil
		}
		at := re.Until.Add(expirySlack)
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: at}
		return true, bg.enqueue(ctx, m, keyStepLeased(stepID, re.Attempt, re.Until))
	}
	return false, nil
}

// queuedAttempt reports whether a step's attempt was started by a
// background executor (world.StepStarted.Queued): from the step_started
// this process appended for it when it did (knownsteps.go: most often a
// session here took the step up), otherwise from the step's events; when
// they cannot be read, it answers yes, the safe side.
func (bg *background) queuedAttempt(ctx context.Context, runID, stepID string, attempt int) bool {
	if queued, ok := bg.known.startedQueued(runID, stepID, attempt); ok {
		return queued
	}
	page, err := bg.w.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{
		RunID: runID, CorrelationID: stepID, Pagination: world.Pagination{Limit: world.MaxPageLimit},
	})
	if err != nil {
		return true
	}
	for _, ev := range page.Items {
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Attempt == attempt {
			return d.Queued
		}
	}
	return true
}

// wakeAfterStep takes a run on after a background step's outcome has
// committed, for delivery d. If the run lease is held, its holder reads the
// log after releasing it and goes on itself if anything arrived (see
// session.afterRelease for why one of the two always does); should d be
// another delivery of the message the holder took it under, coverHolder
// keeps the run from depending on this one.
// Otherwise this executor takes the lease and continues the run in its own
// invocation, which then needs no message; only when its budget is spent
// does it enqueue a continuation (under key).
func (bg *background) wakeAfterStep(ctx context.Context, runID, key string, d delivery) error {
	owner, err := bg.leases.acquireRunLease(ctx, runID, d.tag)
	switch {
	case errors.Is(err, world.ErrLeaseHeld):
		return bg.leases.coverHolder(ctx, runID, d, err) // the holder goes on after releasing the lease
	case err == nil:
		if deadline := bg.budget(ctx); bg.now().Before(deadline) {
			return bg.leases.continueLeased(ctx, runID, owner, deadline)
		}
		_ = bg.leases.releaseRunLease(ctx, runID, owner) // logged; the continuation below goes on
	}
	// Out of budget, or the lease is in an unknown state (an error): a
	// continuation wakes the run, unless it is at rest.
	if bg.atRest(ctx, runID, "step done") {
		return nil
	}
	return bg.enqueue(ctx, world.Message{RunID: runID}, key)
}

// record appends a step outcome outside the run's fence. A refusal means the
// step or its run has moved on (another executor recorded it after this
// one's lease expired, or the run ended): nothing to do. A retry refused
// because the run has ended is recorded as the attempt's failure instead
// (see recordFinal).
//
// It is used after the run's end (rest.go), outside any session's replay:
// its append is fenced on a checked read of the log (appendFenced), so
// that nothing is written to a damaged log.
func (r *stepRunner) record(ctx context.Context, runID string, o outcome) error {
	_, _, err := r.recordOutcome(ctx, runID, o, r.appendFenced)
	return err
}

// recordFinal is record that returns the outcome as recorded (a retry of a
// run that has ended becomes the step's failure, since no attempt starts
// after the end) and whether the run is known to have ended, which makes
// the caller check whether it may be deactivated (rest.go).
//
// An outcome a limit of the run refuses (world.LimitError) is recorded as
// the step's failure by the limit instead, a few hundred bytes (within
// world.LateOutcomeSlack, which an ended run accepts past its bytes); when
// the limit is the run's (its bytes or events, not one payload's) and the
// run is live, it is failed first with the limit's code, as the README
// promises (overLimitOutcome). Retrying the refused outcome could only fail
// again, until its lease expired and the step read as lost.
func (r *stepRunner) recordFinal(ctx context.Context, runID string, o outcome) (outcome, bool, error) {
	return r.recordOutcome(ctx, runID, o, r.append)
}

// recordOutcome is recordFinal committing with add (port.append, or
// port.appendFenced after the run's end). A damaged log
// (world.ErrCorrupt) is returned at once: retrying cannot repair it.
func (r *stepRunner) recordOutcome(ctx context.Context, runID string, o outcome, add func(context.Context, *world.AppendParams) (*world.AppendResult, error)) (outcome, bool, error) {
	var err error
	ended := false
	for try := 0; try < 4; try++ {
		var res *world.AppendResult
		res, err = add(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{o.event()}})
		le := limitRefusal(err)
		switch {
		case err == nil:
			return o, ended || res.Run != nil && res.Run.Status.Terminal(), nil
		case le != nil && !o.comp:
			var failed bool
			if o, failed, err = r.overLimitOutcome(ctx, runID, o, le); err != nil {
				return o, ended, err
			}
			ended = ended || failed
			continue
		case errors.Is(err, world.ErrGone) && o.kind == outRetrying:
			o.kind, o.retryAfter = outFailed, time.Time{}
			continue
		case errors.Is(err, world.ErrGone):
			return o, true, nil
		case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrNotFound):
			return o, false, nil
		case errors.Is(err, world.ErrCorrupt):
			return o, false, err
		case ctx.Err() != nil:
			return o, false, ctx.Err()
		}
		time.Sleep(time.Duration(try+1) * recordBackoff)
	}
	return o, false, err
}
