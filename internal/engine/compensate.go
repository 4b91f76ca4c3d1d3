package engine

// Running compensations. A compensation attempt is run like a step attempt
// (runStep with stepExec.comp): the compensation step's function, under its
// timeout, retried by its policy, with its input built from the
// compensated step's input and result (compensationInput). It is claimed by
// comp_started, under a lease the World keeps on the step and the executor
// renews while the attempt runs, as a step's (watchStep), and its outcome
// is recorded by comp_succeeded, comp_retry_scheduled or comp_failed; the
// World refuses a second outcome, so each is recorded exactly once even
// when a taken-over attempt's executor comes back (bodies are at least
// once, as steps are).
//
// Two callers: a session whose workflow asked for a compensation
// (Context.Compensate, compop.go) runs it inline (launchComp), and the
// run's rest after its end (compensateRest, from deactivate) runs those a
// run whose terminal event asked for them owes, and any that still runs.

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/skeinflow/skein/world"
)

// compInput is a compensation step's input: the compensated step's input
// and result (the SDK's workflow.Compensation encodes the same way).
type compInput struct {
	Input  json.RawMessage `json:"Input"`
	Result json.RawMessage `json:"Result"`
}

// compensationInput encodes the input of the compensation of a step
// called with in that returned result.
func compensationInput(in, result json.RawMessage) json.RawMessage {
	null := json.RawMessage("null")
	if len(in) == 0 {
		in = null
	}
	if len(result) == 0 {
		result = null
	}
	b, err := json.Marshal(compInput{Input: in, Result: result})
	if err != nil { // not valid JSON: pass nothing rather than fail the step
		return null
	}
	return b
}

// compEvent returns the comp_* event recording a compensation attempt's
// outcome.
func (o outcome) compEvent() world.EventInput {
	switch o.kind {
	case outCompleted:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.CompSucceeded{}}
	case outFailed:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.CompFailed{Error: o.failure}}
	default:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.CompRetryScheduled{Error: o.failure, RetryAfter: o.retryAfter}}
	}
}

// refusedComp takes in a comp_started the World refused for now: not yet
// due (a retry's time) or leased by another attempt. It reports whether
// the refusal was one of those.
func refusedComp(c *compState, re *world.RefusalError) bool {
	switch {
	case tooEarly(re):
		c.running, c.retryAfter = false, re.Until
		return true
	case stepLeased(re):
		c.running, c.attempt, c.leaseUntil = true, re.Attempt, re.Until
		return true
	}
	return false
}

// compensatesOnFailure reports whether a failure of the session's workflow
// asks for the run's compensations (Workflow.CompensateOnFailure).
func (s *session) compensatesOnFailure() bool { return s.wf != nil && s.wf.CompensateOnFailure }

// launchComp runs the attempt of o's compensation that comp_started has
// just begun, inline, like a step (launch).
func (s *session) launchComp(ctx context.Context, o *op) {
	c := o.comp
	x := stepExec{
		run: s.meta, stepID: o.id, stepName: o.compLogged, input: compensationInput(o.input, o.result),
		attempt: c.attempt, interrupted: c.lost, startedAt: s.e.now(), inline: true, comp: true,
	}
	s.comping[o.id] = true
	s.start(ctx, o.id, func(ctx context.Context) outcome { return s.e.steps.runStep(ctx, x) })
}

// deliverComp applies a compensation attempt's outcome to the workflow
// before it is committed, and queues its event for the next commit.
func (s *session) deliverComp(o outcome) {
	op := s.r.byID[o.stepID]
	if op == nil || op.comp == nil || op.comp.settled {
		return
	}
	if s.r.over() {
		s.late = append(s.late, o)
		return
	}
	s.pending = append(s.pending, o.event())
	s.held = append(s.held, o)
	switch o.kind {
	case outCompleted:
		s.r.settleComp(op, nil)
		s.r.wake()
	case outFailed:
		s.r.settleComp(op, o.failure)
		s.r.wake()
	case outRetrying:
		s.r.compRetrying(op, o.retryAfter)
	}
}

// compWork reports whether a finished run has compensations to run before
// it may be deactivated: one is running, or its end asked for them and
// one is owed.
func compWork(r *world.Run) bool {
	return r.Compensations.Running > 0 || r.Compensate && r.Compensations.Owed > 0
}

// compensator runs the compensations a finished run owes, in its rest
// (compensateRest, from deactivate): outside any session, the most
// recently completed step's first, every attempt under its own lease
// (stepRunner), scheduling a message to go on when the invocation's
// budget runs out or the next must wait.
type compensator struct {
	*port
	steps *stepRunner
}

// compensateRest runs the compensations a finished run still has to run,
// one after the other, the most recently completed step first: those
// under way, and, when its end asked for them (Run.Compensate), those its
// completed steps owe. It reports whether they have all ended; if not, a
// continuation of the run is scheduled for when the next can go on (a
// retry's time, or a lease's expiry should its executor be lost).
func (cp *compensator) compensateRest(ctx context.Context, run *world.Run) bool {
	deadline := cp.budget(ctx)
	steps, err := cp.compensable(ctx, run.RunID)
	if err != nil {
		cp.log.Warn("engine: list the compensations of a finished run", "run", run.RunID, "err", err)
		cp.scheduleCompCheck(ctx, run.RunID, "", cp.now().Add(restCheckSlack))
		return false
	}
	for _, st := range steps {
		switch st.Status {
		case world.StepStatusCompleted:
			if !run.Compensate {
				continue
			}
		case world.StepStatusCompensating:
		default:
			continue
		}
		if !cp.now().Before(deadline) {
			// Out of budget: a new invocation goes on.
			cp.scheduleCompCheck(ctx, run.RunID, st.StepID, cp.now())
			return false
		}
		if !cp.compensateStep(ctx, run, st) {
			return false
		}
	}
	return true
}

// compensable lists the steps of a run that declared a compensation, the
// most recently completed first (log order of their step_completed).
func (cp *compensator) compensable(ctx context.Context, runID string) ([]*world.Step, error) {
	var steps []*world.Step
	var cursor string
	for {
		p, err := cp.w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		for i := range p.Items {
			if st := &p.Items[i]; st.Compensation != nil && !st.CompletedAt.IsZero() {
				steps = append(steps, st)
			}
		}
		if !p.HasMore {
			break
		}
		cursor = p.Cursor
	}
	if len(steps) < 2 {
		return steps, nil
	}
	order, err := cp.completionOrder(ctx, runID)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(steps, func(i, j int) bool { return order[steps[i].StepID] > order[steps[j].StepID] })
	return steps, nil
}

// completionOrder maps the steps of a run that completed to the sequence
// number of their step_completed.
func (cp *compensator) completionOrder(ctx context.Context, runID string) (map[string]int64, error) {
	order := make(map[string]int64)
	var cursor string
	for {
		p, err := cp.w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		for _, ev := range p.Items {
			if _, ok := ev.Data.(*world.StepCompleted); ok {
				order[ev.CorrelationID] = ev.Seq
			}
		}
		if !p.HasMore || len(p.Items) == 0 {
			return order, nil
		}
		cursor = p.Cursor
	}
}

// compensateStep runs the compensation of st to its end, retrying in
// process while a retry is due within Config.Linger. It reports whether
// the compensation has ended; if not, a continuation is scheduled for when
// it can go on, or another executor has it.
func (cp *compensator) compensateStep(ctx context.Context, run *world.Run, st *world.Step) bool {
	for {
		c := st.Compensation
		now := cp.now()
		if st.Status == world.StepStatusCompensating {
			if wait := c.RetryAfter.Sub(now); wait > 0 {
				if wait > cp.cfg.Linger || !sleepCtx(ctx, wait) {
					cp.scheduleCompCheck(ctx, run.RunID, st.StepID, c.RetryAfter)
					return false
				}
			}
			if c.LeaseExpiresAt.After(now) {
				cp.scheduleCompCheck(ctx, run.RunID, st.StepID, c.LeaseExpiresAt.Add(restCheckSlack))
				return false
			}
		}
		x, ok := cp.startComp(ctx, run, st)
		if !ok {
			return false
		}
		o := cp.steps.runStep(ctx, x)
		if o.kind == outAbandoned {
			return false // the invocation was cut off: the safety net takes over
		}
		if !cp.recordComp(ctx, run.RunID, o) {
			return false
		}
		if o.kind != outRetrying {
			return true
		}
		next, nc := *st, *st.Compensation
		nc.RetryAfter, nc.LeaseExpiresAt = o.retryAfter, time.Time{}
		next.Status, next.Compensation = world.StepStatusCompensating, &nc
		st = &next
	}
}

// startComp commits comp_started for st's compensation and describes the
// attempt it began; after scheduling the safety net at the attempt's lease
// expiry. ok is false when the World refused it: a continuation is then
// scheduled when the refusal says when to try again, and otherwise another
// executor has moved the compensation on.
func (cp *compensator) startComp(ctx context.Context, run *world.Run, st *world.Step) (stepExec, bool) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	name := st.Compensation.Step
	res, err := cp.appendFenced(wctx, &world.AppendParams{RunID: run.RunID, Events: []world.EventInput{
		{CorrelationID: st.StepID, Data: &world.CompStarted{StepName: st.StepName, LeaseTTL: cp.cfg.StepLeaseTTL}},
	}})
	if err != nil {
		re := refusalOf(err)
		switch {
		case tooEarly(re):
			cp.scheduleCompCheck(wctx, run.RunID, st.StepID, re.Until)
		case stepLeased(re):
			cp.scheduleCompCheck(wctx, run.RunID, st.StepID, re.Until.Add(restCheckSlack))
		case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrGone), errors.Is(err, world.ErrNotFound):
		case errors.Is(err, world.ErrCorrupt):
			// Nothing written; the run stays as stored for an operator.
			cp.log.Error("engine: a compensation not started: the run's stored data is corrupt", "run", run.RunID, "step", st.StepID, "err", err)
		default:
			cp.log.Warn("engine: start a compensation", "run", run.RunID, "step", st.StepID, "err", err)
			cp.scheduleCompCheck(wctx, run.RunID, st.StepID, cp.now().Add(restCheckSlack))
		}
		return stepExec{}, false
	}
	d, _ := res.Results[0].Event.Data.(*world.CompStarted)
	if d == nil {
		return stepExec{}, false
	}
	cp.scheduleCompCheck(wctx, run.RunID, st.StepID, d.LeaseExpiresAt.Add(restCheckSlack))
	meta := runMeta{runID: run.RunID, workflowName: run.WorkflowName, input: run.Input, execCtx: run.ExecutionContext, createdAt: run.CreatedAt}
	return stepExec{
		run: meta, stepID: st.StepID, stepName: name, input: compensationInput(st.Input, st.Output),
		attempt: d.Attempt, interrupted: d.Interrupted, startedAt: cp.now(), comp: true,
	}, true
}

// recordComp records a compensation attempt's outcome and reports
// whether it committed. A refusal means the World has the outcome from
// another executor already (exactly once): the caller stops, as that
// executor goes on.
func (cp *compensator) recordComp(ctx context.Context, runID string, o outcome) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	_, err := cp.appendFenced(wctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{o.compEvent()}})
	if err != nil && !errors.Is(err, world.ErrConflict) && !errors.Is(err, world.ErrGone) && !errors.Is(err, world.ErrNotFound) {
		cp.log.Warn("engine: record a compensation's outcome", "run", runID, "step", o.stepID, "err", err)
	}
	return err == nil
}

// scheduleCompCheck enqueues a continuation of a finished run at at, to go
// on with its compensations (a retry's time, or a lease's expiry in case
// the executor running one is lost). Checks of one step for the same
// millisecond share a key.
func (cp *compensator) scheduleCompCheck(ctx context.Context, runID, stepID string, at time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	if err := cp.enqueue(ctx, world.Message{RunID: runID, NotBefore: at}, keyComp(runID, stepID, at)); err != nil {
		cp.log.Warn("engine: schedule the compensation check of a finished run", "run", runID, "err", err)
	}
}

// sleepCtx sleeps d, or until ctx is done (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
