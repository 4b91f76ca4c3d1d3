package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/world"
)

// A run whose replay diverges from its log (the code deployed asks for
// other operations than those recorded) is held, not failed: a bad deploy
// must not destroy every run in flight. The session appends run_held in
// place of run_failed, records only the step results it already holds,
// starts and enqueues nothing for the run, and schedules a retry: a
// continuation carrying the hold's attempt (world.Message.HoldAttempt) at
// the hold's RetryAt, HoldRetryDelay doubling per attempt up to
// HoldRetryLimit. The retry replays the log with the code deployed then:
// if it no longer diverges, build's run_started releases the run and it
// goes on where it stopped; if it still does, the run is held again with
// the next attempt and a longer wait.
//
// Other continuations of a held run (an old timer, a background step's
// result, a hook payload) replay it too. When they find the divergence the
// hold already records, they append nothing (so they cannot grow the log)
// and only make sure the pending retry is scheduled; a different
// divergence (new code) is recorded at once, as the same attempt with the
// same retry time when that retry is not due yet: only a retry, or a
// replay after the retry time, counts as a new attempt and backs off. The log therefore grows by
// one run_held per retry, at most about one an hour once the wait has
// reached its limit, plus one per changed divergence.

// holdState is what the session knows of the run's hold, from its log.
type holdState struct {
	attempt int
	code    string
	message string
	retryAt time.Time
}

// diverged reports whether the replay stopped on a divergence.
func (r *replayer) diverged() bool {
	return r.finished && r.failCode == world.CodeReplayDivergence
}

// holdDelay is the wait before retry attempt+1 of a run held attempt times
// in a row: HoldRetryDelay doubling per attempt, up to HoldRetryLimit.
func (e *parts) holdDelay(attempt int) time.Duration {
	d := e.cfg.HoldRetryDelay
	for i := 1; i < attempt && d < e.cfg.HoldRetryLimit; i++ {
		d *= 2
	}
	return min(d, e.cfg.HoldRetryLimit)
}

// holdRun ends a session whose replay diverged (see the comment above), or
// that found a step not registered (unregistered.go). A
// *staleError means the run changed meanwhile: the caller reloads and
// replays again.
func (c *committer) holdRun(ctx context.Context, now time.Time) error {
	r := c.run.replay()
	prev := c.st.hold
	forced := prev != nil && c.retryAttempt == prev.attempt
	changed := prev == nil || prev.code != r.failCode || prev.message != r.failure.Message
	p := &plan{}
	for _, ev := range c.pending {
		p.add(ev.CorrelationID, ev.Data, eventMeta{echo: true})
	}
	if forced || changed {
		attempt := 1
		if prev != nil {
			attempt = prev.attempt + 1
		}
		retryAt := now.Add(c.e.holdDelay(attempt))
		if prev != nil && !forced && now.Before(prev.retryAt) {
			// A re-hold before the retry is due (a session woken by a step
			// of a fan-out completing, say, finding the divergence told
			// otherwise) is no new attempt: the backoff stays where it is.
			attempt, retryAt = prev.attempt, prev.retryAt
		}
		p.add("", &world.RunHeld{Error: r.failure, ErrorCode: r.failCode, Attempt: attempt, RetryAt: retryAt}, eventMeta{})
	}
	if len(p.events) > 0 {
		if _, err := c.commitPlan(ctx, p); err != nil {
			return err
		}
	}
	c.run.recordLate(ctx, c.run.stopInflight(true)...)
	h := c.st.hold
	if h == nil {
		return nil // the hold was not recorded (another writer ended the run)
	}
	if forced || changed {
		// The lifecycle log (ObserveCommit) tells the hold at WARN.
		c.e.log.Debug("engine: run held: its code does not fit its log", "run", c.runID, "attempt", h.attempt,
			"retryAt", h.retryAt, "code", h.code, "reason", h.message)
	}
	return c.e.scheduleHoldRetry(ctx, c.runID, h.attempt, h.retryAt)
}

// scheduleHoldRetry enqueues the retry of hold attempt of a held run, at
// retryAt; one message per attempt.
func (e *parts) scheduleHoldRetry(ctx context.Context, runID string, attempt int, retryAt time.Time) error {
	m := world.Message{RunID: runID, NotBefore: retryAt, HoldAttempt: attempt}
	return e.enqueue(ctx, m, keyHeld(runID, attempt))
}

// RetryHeldRun enqueues a retry of a held run now, ahead of its scheduled
// one: after a deploy of code that replays the run's log again, the run
// goes on at once. A run that is not held is an error matching
// world.ErrConflict (a finished one) or world.ErrInvalid (a live one).
func RetryHeldRun(ctx context.Context, w world.World, now func() time.Time, runID string) (*world.Run, error) {
	r, err := w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	switch {
	case r.Status.Terminal():
		return r, fmt.Errorf("%w: run %s is %s, not held", world.ErrConflict, runID, r.Status)
	case r.Status != world.RunStatusHeld || r.Hold == nil:
		return r, fmt.Errorf("%w: run %s is %s, not held", world.ErrInvalid, runID, r.Status)
	}
	body, err := world.EncodeMessage(world.Message{RunID: runID, RequestedAt: now(), HoldAttempt: r.Hold.Attempt})
	if err != nil {
		return r, err
	}
	_, err = w.Enqueue(ctx, &world.EnqueueParams{Body: body, IdempotencyKey: keyRetryHeld(runID, r.Hold.Attempt)})
	return r, err
}

// FailRun ends a live run with run_failed: a held run that its owner gives
// up on, or any other. The error's code is code (the hold's code for a
// held run when empty, else world.CodeRuntimeError); the hold's
// error, if any, is its cause. Its side effects (streams closed, a parent
// notified) follow through a continuation. A finished run is an error
// matching world.ErrConflict. compensate, when set, says from the run's
// workflow name whether run_failed asks for the run's completed steps to
// be compensated (RunFailed.Compensate): the run's rest then compensates
// them as for any failed run that asks (compensateRest). It appends
// fenced on a checked read of the log (AppendFenced): a damaged log is
// world.ErrCorrupt, nothing written.
func FailRun(ctx context.Context, w world.World, log *slog.Logger, now func() time.Time, runID, code, reason string, compensate func(workflowName string) bool) error {
	r, err := w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return err
	}
	comp := compensate != nil && compensate(r.WorkflowName)
	data := &world.ErrorData{Type: TypeFailedOnRequest, Message: "failed on request"}
	if reason != "" {
		data.Message += ": " + reason
	}
	if r.Hold != nil {
		data.Cause = r.Hold.Error
		if code == "" {
			code = r.Hold.ErrorCode
		}
	}
	if code == "" {
		code = world.CodeRuntimeError
	}
	// Fenced on a checked read of the log: a damaged run gets nothing
	// written and the World's error (world.ErrCorrupt).
	res, err := AppendFenced(ctx, w, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunFailed{Error: data, ErrorCode: code, Compensate: comp}}}})
	if err == nil {
		ObserveCommit(ctx, log, nil, res)
	}
	if errors.Is(err, world.ErrGone) {
		err = fmt.Errorf("%w: %v", world.ErrConflict, err)
	}
	if err != nil {
		return fmt.Errorf("engine: fail run %s: %w", runID, err)
	}
	return Wake(ctx, w, now, runID, keyFail(runID))
}
