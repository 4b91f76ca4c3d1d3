package engine

// A run's limits (world.Limits, read from the World): the World refuses
// an event past MaxEvents or MaxPayload (world.Apply); the engine checks
// what only it counts (the hooks and waits a run creates), keeps a step's
// oversized result or error out of the log, and fails a run whose commit a
// limit refused, with the limit's code, instead of retrying the commit
// until the message's deliveries run out.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skeinflow/skein/world"
)

// TypeLimitExceeded is the error type of a run or step failed by one of
// its run's limits (world.LimitError); its code is the limit's.
const TypeLimitExceeded = "LimitExceededError"

// limitData records le as an error.
func limitData(le *world.LimitError) *world.ErrorData {
	return &world.ErrorData{Type: TypeLimitExceeded, Message: le.Error(), Code: le.Code(), Fatal: true}
}

// oversizedResult fails a step attempt whose result is larger than the
// run's payload limit: the result never reaches the workflow or the log.
func (r *stepRunner) oversizedResult(x stepExec, n int) *world.ErrorData {
	return limitData(&world.LimitError{RunID: x.run.runID, Limit: "payload", Max: int64(r.lim.MaxPayload), Size: int64(n),
		What: fmt.Sprintf("result of step %q", x.stepName)})
}

// fitError returns d, or, when d is larger than limit bytes as recorded, a
// copy cut to fit limit: its message shortened, its stack, details and causes
// dropped. An error a step returns is the step's to size; the log is not.
func fitError(d *world.ErrorData, limit int) *world.ErrorData {
	if d == nil || world.ErrorSize(d) <= limit {
		return d
	}
	// Stored, each byte that is not UTF-8 becomes U+FFFD (3 bytes), as
	// world.Apply counts it: the message is cut valid, at a rune's start.
	c := &world.ErrorData{Type: d.Type, Message: strings.ToValidUTF8(d.Message, "\uFFFD"), Fatal: d.Fatal, Code: d.Code}
	const note = " ... (cut to fit the run's payload limit)"
	if room := limit - world.ErrorSize(&world.ErrorData{Type: c.Type, Code: c.Code}) - len(note); len(c.Message) > room {
		cut := max(room, 0)
		for cut > 0 && !utf8.RuneStart(c.Message[cut]) {
			cut--
		}
		c.Message = c.Message[:cut] + note
	}
	return c
}

// overLimit reports the limit the workflow's operations pass, nil when
// none: more hooks or waits than the run may create.
func (c *committer) overLimit() *world.LimitError {
	l := c.e.lim
	switch {
	case c.run.replay().hooks > l.MaxHooks:
		return &world.LimitError{RunID: c.runID, Limit: "hooks", Max: int64(l.MaxHooks), Size: int64(c.run.replay().hooks)}
	case c.run.replay().waits > l.MaxWaits:
		return &world.LimitError{RunID: c.runID, Limit: "waits", Max: int64(l.MaxWaits), Size: int64(c.run.replay().waits)}
	}
	return nil
}

// failOverLimit fails the run with le's code: the limit a commit would
// pass, or the workflow's operations. Only run_failed is committed (what
// was delivered but not committed is recorded after the end, as the World
// allows). A *staleError means the run changed first: the loop refreshes
// and decides again.
func (c *committer) failOverLimit(ctx context.Context, le *world.LimitError) error {
	c.e.log.Warn("engine: run failed: over a limit", "run", c.runID, "limit", le.Limit, "max", le.Max, "err", le)
	p := &plan{terminal: true}
	p.add("", &world.RunFailed{Error: limitData(le), ErrorCode: le.Code(), Compensate: c.run.compensatesOnFailure()}, eventMeta{})
	held := c.held
	committed, err := c.commitPlan(ctx, p)
	if err != nil {
		return err
	}
	if !committed {
		return fmt.Errorf("engine: run %s: could not record that it passed its %s limit", c.runID, le.Limit)
	}
	c.run.recordLate(ctx, held...)
	return c.run.rest(ctx, false, false)
}

// isStale reports whether err is a *staleError.
func isStale(err error) bool {
	var stale *staleError
	return errors.As(err, &stale)
}

// limitRefusal returns the *world.LimitError err carries, nil when none.
func limitRefusal(err error) *world.LimitError {
	var le *world.LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// overLimitOutcome is what a step outcome that le refused records instead:
// the step's failure by the limit (limitData, fatal, a few hundred bytes:
// within world.LateOutcomeSlack, so an ended run accepts it past its
// bytes). A refusal by the run's own bound (its bytes or events, not one
// payload's) fails the run first with the limit's code, when it is live:
// its outcome passes the run's bound, inline or in the background, awaited
// or not (failRunOverLimit). failed reports that this call ended the run.
func (r *stepRunner) overLimitOutcome(ctx context.Context, runID string, o outcome, le *world.LimitError) (_ outcome, failed bool, err error) {
	if le.Limit != "payload" {
		if failed, err = r.failRunOverLimit(ctx, runID, le); err != nil {
			return o, false, err
		}
	}
	r.log.Warn("engine: step outcome refused by a limit; its failure by the limit is recorded instead",
		"run", runID, "step", o.stepID, "limit", le.Limit, "max", le.Max, "size", le.Size)
	o.kind, o.result, o.retryAfter, o.failure = outFailed, nil, time.Time{}, limitData(le)
	return o, failed, nil
}

// failRunOverLimit fails a live run, from outside its session, with the
// code of le, the limit a step outcome would pass (a background step's, or
// one recorded after the session that ran it ended), and wakes it for its
// end's side effects and rest, as FailRun does. A run that has ended
// already keeps its outcome (failed false).
func (sr *stepRunner) failRunOverLimit(ctx context.Context, runID string, le *world.LimitError) (failed bool, err error) {
	comp := false
	if r, err := sr.w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil {
		return false, err
	} else if r.Status.Terminal() {
		return false, nil
	} else if wf, ok := sr.reg.Workflow(r.WorkflowName); ok {
		comp = wf.CompensateOnFailure
	}
	_, err = sr.appendFenced(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunFailed{Error: limitData(le), ErrorCode: le.Code(), Compensate: comp}},
	}})
	switch {
	case errors.Is(err, world.ErrGone), errors.Is(err, world.ErrConflict):
		return false, nil // ended by another writer first
	case err != nil:
		return false, err
	}
	sr.log.Warn("engine: run failed: a step outcome passes a limit", "run", runID, "limit", le.Limit, "max", le.Max, "err", le)
	sr.logs.drop(runID) // a workflow kept for the run goes on no more
	if err := Wake(ctx, sr.w, sr.now, runID, keyFail(runID)); err != nil {
		sr.log.Warn("engine: wake a run failed by a limit", "run", runID, "err", err)
	}
	return true, nil
}
