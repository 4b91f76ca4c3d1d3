package engine

// A run's rest after its end. The terminal event fixes the outcome; what
// follows it runs here, in this order:
//
//  1. the cleanup hook of a completed run whose workflow has one
//     (Workflow.Cleanup), recorded by run_cleaned_up (cleanup.go);
//  2. the side effects of the end (afterTerminal: streams closed, a parent
//     resumed with a child's outcome), so a parent wakes after the cleanup;
//  3. the steps still running finish: on completed and failed they keep
//     running and record their outcomes; on cancelled their contexts are
//     cancelled and they record their failure (TypeRunCancelled);
//  4. the compensations: those still under way, and, when the terminal
//     event asked for them (run_failed or run_cancelled with Compensate),
//     those the completed steps owe, the most recently completed first
//     (compensateRest, compensate.go);
//  5. run_deactivated, once no step runs and no compensation is left
//     (deactivate), which the World refuses before; the run's streams are
//     closed again just before it, for those opened after its end.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/skeinflow/skein/world"
)

// TypeRunCancelled is the error recorded for a step attempt whose context
// was cancelled because its run was cancelled while it ran.
const TypeRunCancelled = "RunCancelledError"

// restCheckSlack is added to a step lease's expiry before the safety-net
// check of a finished run looks at it again (scheduleRestCheck).
const restCheckSlack = time.Second

// rest runs a run's rest after its end, outside its sessions: the steps
// above, for the session that committed the end (session.rest), a
// message delivered for a finished run, or a background step that
// outlived its run. Its cleanup is cleanup.go, its side effects on
// children, parent and streams cascade.go, the children cancelled with
// an orphaned parent orphan.go.
type rest struct {
	*port
	steps *stepRunner
	comps *compensator
}

// afterEnd runs what follows a run's terminal event that needs no step of
// it to finish: the cleanup hook, then afterTerminal. An error means the
// cleanup's outcome could not be recorded: the end is not signalled, and
// the caller's message must come back to try again.
func (rs *rest) afterEnd(ctx context.Context, runID, workflowName string, execCtx json.RawMessage, known bool, status world.RunStatus) error {
	if err := rs.cleanupIfPending(ctx, runID, workflowName); err != nil {
		return err
	}
	rs.afterTerminal(ctx, runID, execCtx, known, status)
	return nil
}

// endAndRest is afterEnd followed by deactivate, for callers with no step
// of the run in flight.
func (rs *rest) endAndRest(ctx context.Context, runID, workflowName string, execCtx json.RawMessage, known bool, status world.RunStatus) error {
	if err := rs.afterEnd(ctx, runID, workflowName, execCtx, known, status); err != nil {
		return err
	}
	rs.deactivate(ctx, runID)
	return nil
}

// deactivate commits run_deactivated for a finished run with nothing left
// running: no cleanup pending and no step running. A step still running
// under a live lease is someone else's to finish (its executor calls
// deactivate again after recording it); should that executor die, a
// safety-net continuation at the lease's expiry (scheduleRestCheck) finds
// the lease expired, records the attempt as lost and deactivates. Racing
// writers are decided by the World: at most one run_deactivated commits,
// the others are refused (ErrConflict) and ignored.
func (rs *rest) deactivate(ctx context.Context, runID string) {
	callCtx := ctx // compensations run under the caller's context
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, sideEffectTimeout)
	defer cancel()
	run, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil || !run.Status.Terminal() || run.Deactivated() || run.Cleanup == world.CleanupPending {
		return
	}
	live, starts, err := rs.runningSteps(ctx, runID)
	if err != nil {
		rs.log.Warn("engine: list the steps of a finished run", "run", runID, "err", err)
		return
	}
	if !live.IsZero() {
		rs.scheduleRestCheck(ctx, runID, live)
		return
	}
	if err := rs.cancelOrphans(ctx, runID, starts); err != nil {
		// Not at rest until every child its failed starts created is
		// known to have started or been cancelled: check again soon.
		rs.log.Warn("engine: check the children of a finished run's failed starts", "run", runID, "err", err)
		rs.scheduleRestCheck(ctx, runID, rs.now())
		return
	}
	if compWork(run) && !rs.comps.compensateRest(callCtx, run) {
		return
	}
	// Nothing writes to the run's streams any more: those its compensations
	// or left-running steps opened after its end close before it is at rest.
	rs.closeStreams(ctx, runID)
	_, err = rs.appendFenced(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunDeactivated{}}}})
	if err != nil && !errors.Is(err, world.ErrConflict) {
		rs.log.Warn("engine: deactivate a finished run", "run", runID, "err", err)
	}
}

// runningSteps records as lost the steps of a finished run that still run
// under an expired lease, and returns the latest expiry of those that run
// under a live one (zero when none does), and the IDs of its failed
// StartChildStep steps (starts, see cancelOrphans).
func (rs *rest) runningSteps(ctx context.Context, runID string) (live time.Time, starts []string, err error) {
	now := rs.now()
	var cursor string
	for {
		p, err := rs.w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return time.Time{}, nil, err
		}
		for _, st := range p.Items {
			if st.StepName == StartChildStep && st.Status == world.StepStatusFailed {
				starts = append(starts, st.StepID)
			}
			if st.Status != world.StepStatusRunning {
				continue
			}
			if st.LeaseExpiresAt.After(now) {
				live = later(live, st.LeaseExpiresAt)
				continue
			}
			lost := &world.ErrorData{Type: TypeExecutorLost, Code: world.CodeStepExecutorLost, Fatal: true,
				Message: "the step's executor was lost after its run ended: its attempt recorded no outcome"}
			if err := rs.steps.record(ctx, runID, outcome{stepID: st.StepID, stepName: st.StepName, kind: outFailed, failure: lost}); err != nil {
				return time.Time{}, nil, err
			}
			if st.StepName == StartChildStep {
				starts = append(starts, st.StepID)
			}
		}
		if !p.HasMore {
			return live, starts, nil
		}
		cursor = p.Cursor
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// scheduleRestCheck enqueues the safety net of a finished run whose steps
// still run: a continuation just past their lease's expiry, which runs
// deactivate again (a session of a finished run does: rest.endAndRest).
// Checks of one run for the same second share a key. The check must arrive
// without hopping (a hop of a finished run's message is dropped, see
// Engine.hop), so a step lease longer than Config.MaxQueueDelay leaves a
// lost executor's run undeactivated until its next delivery.
func (rs *rest) scheduleRestCheck(ctx context.Context, runID string, expiry time.Time) {
	at := leaseCheckAt(expiry.Add(restCheckSlack))
	if err := rs.enqueue(ctx, world.Message{RunID: runID, NotBefore: at}, keyRest(runID, at)); err != nil {
		rs.log.Warn("engine: schedule the rest check of a finished run", "run", runID, "err", err)
	}
}

// cancelledData is the failure recorded for a step attempt cut off by its
// run's cancellation.
func cancelledData(x stepExec) *world.ErrorData { return cancelledStep(x.stepName) }

func cancelledStep(name string) *world.ErrorData {
	return &world.ErrorData{Type: TypeRunCancelled, Fatal: true,
		Message: "step " + name + ": the run was cancelled while the attempt ran"}
}

// recordAfterEnd records a step outcome that arrived after its run ended:
// a retry becomes the attempt's failure (no attempt starts after the end,
// and the World refuses step_retrying), an abandoned attempt nothing.
func (rs *rest) recordAfterEnd(ctx context.Context, runID string, o outcome) error {
	switch {
	case o.kind == outAbandoned:
		return nil
	case o.comp:
		// A compensation may go on after the end: its retry is recorded,
		// and the run's rest takes it up (compensateRest).
		rs.comps.recordComp(ctx, runID, o)
		return nil
	case o.kind == outRetrying:
		o.kind = outFailed
	}
	return rs.steps.record(ctx, runID, o)
}

// rest ends a session whose run has ended (its own terminal commit, or
// another writer's when foreign): the cleanup and the end's side effects,
// then the steps still in flight finish (cancelled when cancel: the run was
// cancelled) and record their outcomes, then the run is deactivated. While
// steps are in flight, a safety-net check is scheduled first, in case this
// invocation dies before they end.
func (s *session) rest(ctx context.Context, cancel, deactivated bool) error {
	if err := s.e.rest.afterEnd(ctx, s.runID, s.meta.workflowName, s.meta.execCtx, true, s.runStatus); err != nil {
		return err
	}
	if len(s.running) > 0 {
		s.e.rest.scheduleRestCheck(ctx, s.runID, s.e.now().Add(s.e.cfg.StepLeaseTTL))
	}
	s.recordLate(ctx, s.drainInflight(cancel)...)
	if !deactivated {
		s.e.rest.deactivate(ctx, s.runID)
	}
	return nil
}

// hasCleanup reports whether the session's workflow has a cleanup hook.
func (s *session) hasCleanup() bool { return s.wf != nil && s.wf.Cleanup != nil }

// restful reports whether the run may be deactivated with its terminal
// event, which the session is about to commit: no cleanup to run, no step
// in flight here, and none that the log shows running elsewhere (the
// commit is fenced on that log). A completed run with a cleanup hook, or
// with steps running, or a failed start of a child, is deactivated later
// (rest).
func (s *session) restful() bool {
	if len(s.running) > 0 || s.solo != nil || (s.r.failure == nil && s.hasCleanup()) {
		return false
	}
	if s.r.failure != nil && s.compensatesOnFailure() && s.r.owesCompensation() {
		return false // compensated after the end (compensateRest)
	}
	for _, o := range s.r.openSteps {
		if o.status == world.StepStatusRunning {
			return false
		}
	}
	for _, o := range s.r.ops {
		if o.kind == opStep && o.name == StartChildStep && o.status == world.StepStatusFailed {
			return false // its child may wait for a message: deactivate cancels it (cancelOrphans)
		}
	}
	return true
}

// drainInflight waits for the steps still running (cancelling them first
// when cancel is set, whose attempts then record the run's cancellation)
// and returns their outcomes with those that arrived after the workflow
// finished (late).
func (in *inflight) drainInflight(cancel bool) []outcome {
	in.spawnSolo()
	if cancel {
		for id, c := range in.running {
			if !in.comping[id] { // a compensation runs on: it undoes what the run did
				c()
			}
		}
	}
	for len(in.running) > 0 {
		o := <-in.results
		delete(in.running, o.stepID)
		delete(in.comping, o.stepID)
		if cancel && o.kind == outAbandoned && !o.comp {
			o.kind, o.failure = outFailed, cancelledStep(o.stepName)
		}
		in.late = append(in.late, o)
	}
	late := in.late
	in.late = nil
	return late
}

// endAndRest is rest.endAndRest for a session that found its run ended
// on loading it: a run whose log shows it deactivated needs nothing more
// than the end's side effects (idempotent, run again).
func (s *session) endAndRest(ctx context.Context) error {
	if err := s.e.rest.afterEnd(ctx, s.runID, s.meta.workflowName, s.meta.execCtx, true, s.runStatus); err != nil {
		return err
	}
	if !s.deactivated {
		s.e.rest.deactivate(ctx, s.runID)
	}
	return nil
}
