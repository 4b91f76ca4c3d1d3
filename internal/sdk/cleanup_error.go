package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// How a cleanup hook failed (CleanupError.Kind).
const (
	// CleanupReturnedError: the hook returned an error (CleanupError.Cause).
	CleanupReturnedError = "error"
	// CleanupPanicked: the hook panicked.
	CleanupPanicked = "panic"
	// CleanupTimedOut: the hook ran past its CleanupOptions.Timeout.
	CleanupTimedOut = "timeout"
)

// ErrCleanupPending is CleanupErr's answer for a completed run whose
// cleanup hook has not recorded its outcome yet.
var ErrCleanupPending = errors.New("workflow: the run's cleanup has not recorded its outcome")

// CleanupError is the recorded failure of a run's cleanup hook. The run
// itself stays completed with its result.
type CleanupError struct {
	RunID string
	// Kind is CleanupReturnedError, CleanupPanicked or CleanupTimedOut.
	Kind    string
	Message string
	// Cause is the hook's error, typed again through the Registry, for
	// CleanupReturnedError.
	Cause error
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("workflow: cleanup of run %s failed (%s): %s", e.RunID, e.Kind, e.Message)
}

func (e *CleanupError) Unwrap() error { return e.Cause }

// CleanupErr reports how a run's cleanup hook ended: nil when it succeeded
// or the run has none (a failed or cancelled run, a workflow without a
// hook), a *CleanupError when it failed, ErrCleanupPending while it has
// not recorded its outcome. It reads the run, and the run's
// run_cleaned_up event when the hook failed.
func (c *Client) CleanupErr(ctx context.Context, runID string) error {
	r, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return err
	}
	switch r.Cleanup {
	case world.CleanupPending:
		return ErrCleanupPending
	case world.CleanupFailed:
	default:
		return nil
	}
	p := world.Pagination{Limit: 16, Descending: true}
	for {
		page, err := c.w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: p})
		if err != nil {
			return err
		}
		for _, ev := range page.Items {
			if d, ok := ev.Data.(*world.RunCleanedUp); ok && d.Error != nil {
				return c.cleanupError(runID, d.Error)
			}
		}
		if !page.HasMore {
			return &CleanupError{RunID: runID, Kind: CleanupReturnedError, Message: "the cleanup failed; its event is no longer in the log"}
		}
		p.Cursor, p.Limit = page.Cursor, world.MaxPageLimit
	}
}

func (c *Client) cleanupError(runID string, d *world.ErrorData) *CleanupError {
	e := &CleanupError{RunID: runID, Kind: CleanupReturnedError, Message: d.Message}
	switch d.Type {
	case engine.TypeCleanupPanic:
		e.Kind = CleanupPanicked
	case engine.TypeCleanupTimeout:
		e.Kind = CleanupTimedOut
	default:
		e.Cause = c.reg.decode(d)
	}
	return e
}
