package world

import "time"

// A run's end comes in two parts. Its terminal event (run_completed,
// run_failed, run_cancelled) fixes the outcome: callers may use it at once,
// and no new step starts. Work the run had already started may still be
// under way: steps running when the outcome was committed record their
// results for the log, and a completed run whose workflow has a cleanup hook
// runs it (run_cleaned_up). Once nothing is pending or running any more,
// run_deactivated records that the run is at rest for good.
//
// After the end, a step that was running may record step_completed or
// step_failed; step_created, step_started and step_retrying are refused
// (ErrConflict, ErrGone, ErrGone): no attempt starts after the end, a retry
// included, so a writer whose attempt failed with retries left records the
// attempt's error as the step's failure instead.

// Event types of a run's rest after its end.
const (
	// EventRunDeactivated marks a finished run at rest: nothing of it is
	// pending or running. At most one per run, after its terminal event.
	EventRunDeactivated EventType = "run_deactivated"
	// EventRunCleanedUp records the outcome of a completed run's cleanup
	// hook. At most one per run, and only for a run whose run_completed
	// asked for it (RunCompleted.Cleanup).
	EventRunCleanedUp EventType = "run_cleaned_up"
)

// Cleanup states of a run (Run.Cleanup).
const (
	// CleanupPending: the run completed and its cleanup hook has not yet
	// recorded an outcome.
	CleanupPending = "pending"
	// CleanupDone: the hook returned nil.
	CleanupDone = "done"
	// CleanupFailed: the hook returned an error, panicked or ran past its
	// timeout; the run stays completed.
	CleanupFailed = "failed"
)

type (
	// RunDeactivated marks a finished run at rest. It carries nothing: the
	// World stamps Run.DeactivatedAt with its time.
	RunDeactivated struct{}
	// RunCleanedUp records the outcome of a completed run's cleanup hook:
	// no Error when the hook succeeded. It never changes the run's outcome.
	RunCleanedUp struct {
		Error *ErrorData `json:"error,omitempty"`
	}
)

// EventType implementations.
func (*RunDeactivated) eventType() EventType { return EventRunDeactivated }
func (*RunCleanedUp) eventType() EventType   { return EventRunCleanedUp }

func (d *RunDeactivated) validate(corr string) error { return noCorrelation(EventRunDeactivated, corr) }
func (d *RunCleanedUp) validate(corr string) error   { return noCorrelation(EventRunCleanedUp, corr) }

// Deactivated reports whether the run is at rest for good (run_deactivated
// committed).
func (r *Run) Deactivated() bool { return !r.DeactivatedAt.IsZero() }

// applyRunDeactivated accepts the first run_deactivated of a finished run
// whose cleanup, if any, has recorded its outcome. Everything else is a
// conflict: before the end the run is still active, a second one would say
// twice that it came to rest. The World cannot see whether steps still run
// (it judges one event on one entity): the writer checks that.
func applyRunDeactivated(s State, eff *Effect, now time.Time) error {
	switch r := s.Run; {
	case !r.Status.Terminal():
		return refuse(ErrConflict, EventRunDeactivated, r.RunID, "run is %s, not finished", r.Status)
	case r.Deactivated():
		return refuse(ErrConflict, EventRunDeactivated, r.RunID, "run is already deactivated")
	case r.Cleanup == CleanupPending:
		return refuse(ErrConflict, EventRunDeactivated, r.RunID, "run's cleanup has not recorded its outcome")
	case compensationsPending(r) != "":
		return refuse(ErrConflict, EventRunDeactivated, r.RunID, "%s", compensationsPending(r))
	}
	eff.Run.DeactivatedAt = now
	return nil
}

// applyRunCleanedUp accepts the one outcome of a pending cleanup.
func applyRunCleanedUp(s State, eff *Effect, d *RunCleanedUp) error {
	if s.Run.Cleanup != CleanupPending {
		return refuse(ErrConflict, EventRunCleanedUp, s.Run.RunID, "run %s has no cleanup pending (status %s, cleanup %q)", s.Run.RunID, s.Run.Status, s.Run.Cleanup)
	}
	eff.Run.Cleanup = CleanupDone
	if d.Error != nil {
		eff.Run.Cleanup = CleanupFailed
	}
	return nil
}
