package sdk

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// Cleanup is what a workflow's cleanup hook (WithCleanup) receives about a
// run that has completed.
type Cleanup[I, O any] struct {
	RunID        string
	WorkflowName string
	// Input is the run's input, Result its final result (as recorded).
	Input  I
	Result O
	// Previous is the state before the run's last step, as recorded: the
	// result of the last step that completed before the run did, or the
	// run's input when no step did. Decode it with DecodePrevious.
	Previous    json.RawMessage
	Attributes  map[string]string
	ParentRunID string
	RootRunID   string
	CreatedAt   time.Time
	CompletedAt time.Time
}

// DecodePrevious decodes Previous into v.
func (c *Cleanup[I, O]) DecodePrevious(v any) error {
	if err := unmarshal(c.Previous, v); err != nil {
		return &SerializationError{What: "cleanup previous state", Err: err}
	}
	return nil
}

// CleanupOptions tunes a cleanup hook.
type CleanupOptions struct {
	// Timeout bounds one call of the hook (default one minute): its
	// context is cancelled then, and the call is recorded as failed with a
	// CleanupTimeoutError once it returns or a short grace has passed.
	Timeout time.Duration
}

// WithCleanup gives the workflow a cleanup hook and returns the workflow;
// call it before registering the workflow. The hook runs once a run of the
// workflow has completed, and never for a run that failed or was
// cancelled: after run_completed is durably recorded and before the end is
// signalled, so a Result of the run returns, and a parent run waiting on
// it as a child wakes, only once the hook's outcome is recorded (a
// run_cleaned_up event).
//
// The hook runs at least once: should its process die before its outcome
// is recorded, the run's next continuation calls it again, so it must be
// idempotent (deleting what is already deleted is fine). An error it
// returns, a panic or a run past its timeout is logged and recorded with
// the event (RunInfo.Cleanup is then "failed"); the run stays completed
// with its result. Unlike the workflow function, the hook is no
// deterministic code: it may do I/O, like a step.
func (w *Workflow[I, O]) WithCleanup(fn func(ctx context.Context, c *Cleanup[I, O]) error, opts ...CleanupOptions) *Workflow[I, O] {
	w.cleanup = fn
	if len(opts) > 0 {
		w.cleanupTimeout = opts[0].Timeout
	}
	return w
}

// engineCleanup adapts the workflow's hook for the engine (nil when none).
func (w *Workflow[I, O]) engineCleanup() func(context.Context, *engine.CleanupInfo) error {
	if w.cleanup == nil {
		return nil
	}
	fn := w.cleanup
	return func(ctx context.Context, info *engine.CleanupInfo) error {
		c := &Cleanup[I, O]{
			RunID: info.RunID, WorkflowName: info.WorkflowName, Previous: info.Previous,
			Attributes: info.Attributes, CreatedAt: info.CreatedAt, CompletedAt: info.CompletedAt,
		}
		if err := unmarshal(info.Input, &c.Input); err != nil {
			return &SerializationError{What: "cleanup input", Err: err}
		}
		if err := unmarshal(info.Output, &c.Result); err != nil {
			return &SerializationError{What: "cleanup result", Err: err}
		}
		var ec engine.ExecutionContext
		if len(info.ExecutionContext) > 0 && json.Unmarshal(info.ExecutionContext, &ec) == nil {
			c.ParentRunID, c.RootRunID = ec.ParentRunID, ec.RootRunID
		}
		return fn(ctx, c)
	}
}

// WaitDeactivated waits until the run has come to rest after its end
// (run_deactivated): its outcome is recorded, its cleanup hook has run, and
// no step of it runs any more. Result returns as soon as the outcome is
// known; WaitDeactivated also waits for the steps a completed or failed
// run left running, which record their results after its end, and for the
// compensations that run after the end (RunInfo.Compensations).
func (c *Client) WaitDeactivated(ctx context.Context, runID string) (*RunInfo, error) {
	r, err := c.poll(ctx, runID, func(r *world.Run) bool { return r.Deactivated() })
	if err != nil {
		return nil, err
	}
	return c.fullRunInfo(ctx, r)
}
