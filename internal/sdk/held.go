package sdk

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// HoldInfo says why a held run (world.RunStatusHeld) is held: its replay diverged
// from its log, because the code deployed asks for other steps, hooks or
// timers than those the run recorded, or the code calls a step that the
// deployment's Registry does not hold. Nothing runs for it until its code
// fits again: the worker retries it at RetryAt (1 minute after
// the first hold, doubling up to an hour) and at once on Client.RetryRun,
// so deploying compatible code resumes it. Client.Cancel and
// Client.FailRun end it.
type HoldInfo struct {
	// Code is the hold's error code: REPLAY_DIVERGENCE, or
	// DEPLOYMENT_MISMATCH for a step not registered. RunInfo.ErrorCode
	// stays empty while the run is held: it names why a run failed, and
	// becomes this code if the run is failed (Client.FailRun).
	Code string
	// Err is the divergence, naming what the log has and what the code
	// asks for, or names the step that is not registered.
	Err error
	// Attempt counts the holds in a row; Since is when the first began.
	Attempt int
	Since   time.Time
	// RetryAt is when the run is replayed again.
	RetryAt time.Time
}

func (c *Client) holdInfo(h *world.RunHold) *HoldInfo {
	if h == nil {
		return nil
	}
	info := &HoldInfo{Code: h.ErrorCode, Attempt: h.Attempt, Since: h.Since, RetryAt: h.RetryAt}
	if h.Error != nil {
		info.Err = c.reg.decode(h.Error)
	}
	return info
}

// RetryRun replays a held run now instead of at its next retry: after a
// deploy of code compatible with the run's log, the run goes on at once;
// otherwise it is held again. A run that is not held is an error (matching
// world.ErrConflict when it has finished, world.ErrInvalid when it is
// live).
func (c *Client) RetryRun(ctx context.Context, runID string) error {
	if _, err := engine.RetryHeldRun(ctx, c.w, c.now, runID); err != nil {
		return fmt.Errorf("workflow: retry run %s: %w", runID, err)
	}
	return nil
}

// FailRun ends a pending, running or held run as failed, recording reason:
// what to do with a held run whose code will not come back. A held run
// fails with its hold's code (REPLAY_DIVERGENCE, DEPLOYMENT_MISMATCH) and
// the hold's error as the error's cause; another run with RUNTIME_ERROR. Its client then gets a
// *RunFailedError, a parent run its child's failure. A finished run is an
// error matching world.ErrConflict.
//
// A run failed by hand is compensated as a failed run is (see
// WithCompensation): its completed steps are undone after the end, the
// most recently completed first, and the run comes to rest once they have
// all ended. It is compensated when FailCompensating is given, not when
// FailWithoutCompensating is, and otherwise when the client's Registry
// (client.Config.Registry) holds the run's workflow defined
// WithCompensateOnFailure: that workflow asked for its failures to be
// undone, and a failure by hand is no different for the steps it booked. A
// client without the workflow in its Registry (the skein CLI, say) cannot
// tell, and does not compensate unless asked.
//
// As Cancel, FailRun reads the run's log first and appends fenced on it: a
// run whose stored log is damaged is an error matching world.ErrCorrupt,
// and nothing is written.
func (c *Client) FailRun(ctx context.Context, runID, reason string, opts ...FailOption) error {
	var o failOptions
	for _, opt := range opts {
		opt(&o)
	}
	compensate := func(name string) bool {
		if o.compensate != nil {
			return *o.compensate
		}
		return c.reg.compensatesOnFailure(name)
	}
	if err := engine.FailRun(ctx, c.w, c.log, c.now, runID, "", reason, compensate); err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	return nil
}

// FailOption tunes Client.FailRun.
type FailOption func(*failOptions)

// failOptions: compensate is nil when neither option was given.
type failOptions struct{ compensate *bool }

// FailCompensating makes FailRun compensate the run's completed steps that
// declared a compensation, whatever its workflow's definition says.
func FailCompensating() FailOption {
	return func(o *failOptions) { o.compensate = new(true) }
}

// FailWithoutCompensating makes FailRun leave the run's completed steps as
// they are, even when its workflow is defined WithCompensateOnFailure.
func FailWithoutCompensating() FailOption {
	return func(o *failOptions) { o.compensate = new(false) }
}
