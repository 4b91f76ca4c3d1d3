package engine

// The cleanup hook: a workflow's function called once a run of it has
// completed. The run_completed of such a run says so (RunCompleted.Cleanup)
// and leaves the run's cleanup pending; whoever finds it pending after the
// end (the session that committed it, or any later continuation of the run,
// after a crash) calls the hook and records its outcome with
// run_cleaned_up. The hook thus runs at least once, and more than once only
// when its process dies before the outcome commits. Only then are the run's
// end signalled (afterTerminal) and the run deactivated, and the client's
// Result of a run with a cleanup waits for run_cleaned_up.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/skeinflow/skein/world"
)

// DefaultCleanupTimeout bounds a cleanup hook's call when its workflow
// names no timeout.
const DefaultCleanupTimeout = time.Minute

// cleanupGrace is how long a cleanup hook that ignores its context's
// cancellation is waited for past its timeout before it is left behind.
const cleanupGrace = 100 * time.Millisecond

// Error types a cleanup's failure is recorded with (besides what the hook
// returned, encoded by Config.EncodeError).
const (
	TypeCleanupPanic   = "CleanupPanicError"
	TypeCleanupTimeout = "CleanupTimeoutError"
)

// CleanupInfo is what a cleanup hook receives about the completed run.
type CleanupInfo struct {
	RunID        string
	WorkflowName string
	// Input is the run's input, Output its final result.
	Input, Output json.RawMessage
	// Previous is the state before the run's last step: the result of the
	// last step that completed before the run did, or the run's input when
	// none did.
	Previous         json.RawMessage
	Attributes       map[string]string
	ExecutionContext json.RawMessage
	CreatedAt        time.Time
	CompletedAt      time.Time
}

// cleanupIfPending runs the cleanup hook of a completed run whose cleanup
// is pending and records its outcome. A run of a workflow with no hook
// here (workflowName empty: a run the caller failed) costs no read.
//
// An error means the outcome could not be recorded (or the run not read):
// the caller's message is to come back and call the hook again.
func (rs *rest) cleanupIfPending(ctx context.Context, runID, workflowName string) error {
	if wf, ok := rs.reg.Workflow(workflowName); workflowName == "" || (ok && wf.Cleanup == nil) {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	run, err := rs.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return fmt.Errorf("engine: read run %s for its cleanup: %w", runID, err)
	}
	if run.Status != world.RunStatusCompleted || run.Cleanup != world.CleanupPending {
		return nil
	}
	if err := sealedWithoutKey(runID, run.Input, run.ExecutionContext); err != nil {
		return err // never call the hook with an envelope
	}
	wf, ok := rs.reg.Workflow(run.WorkflowName)
	var failure *world.ErrorData
	if !ok || wf.Cleanup == nil {
		failure = &world.ErrorData{Type: TypeNotRegistered, Message: fmt.Sprintf("workflow %q has no cleanup hook registered in this deployment", run.WorkflowName)}
	} else {
		info, err := rs.cleanupInfo(ctx, run)
		if err != nil {
			return fmt.Errorf("engine: read the log of run %s for its cleanup: %w", runID, err)
		}
		failure = rs.callCleanup(ctx, wf, info)
	}
	if failure != nil {
		rs.log.Error("engine: cleanup hook failed; the run stays completed", "run", runID, "workflow", run.WorkflowName, "type", failure.Type, "error", failure.Message)
	}
	_, err = rs.appendFenced(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCleanedUp{Error: failure}}}})
	if err != nil && !errors.Is(err, world.ErrConflict) {
		return fmt.Errorf("engine: record the cleanup of run %s: %w", runID, err)
	}
	return nil
}

// callCleanup calls wf's hook under its timeout and returns its failure,
// nil when it returned nil.
func (rs *rest) callCleanup(ctx context.Context, wf *Workflow, info *CleanupInfo) *world.ErrorData {
	timeout := wf.CleanupTimeout
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan *world.ErrorData, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- &world.ErrorData{Type: TypeCleanupPanic, Message: fmt.Sprintf("cleanup hook panicked: %v", r), Stack: string(debug.Stack())}
			}
		}()
		if err := wf.Cleanup(ctx, info); err != nil {
			if ctx.Err() != nil {
				done <- &world.ErrorData{Type: TypeCleanupTimeout, Message: fmt.Sprintf("cleanup hook ran past its %s timeout: %v", timeout, err)}
				return
			}
			done <- rs.cfg.EncodeError(err)
			return
		}
		done <- nil
	}()
	select {
	case f := <-done:
		return f
	case <-ctx.Done():
	}
	grace := time.NewTimer(cleanupGrace)
	defer grace.Stop()
	select {
	case f := <-done:
		return f
	case <-grace.C:
		return &world.ErrorData{Type: TypeCleanupTimeout, Message: fmt.Sprintf("cleanup hook ran past its %s timeout", timeout)}
	}
}

// cleanupInfo describes a completed run to its hook; Previous is read from
// the run's log, newest first, skipping what followed run_completed.
func (rs *rest) cleanupInfo(ctx context.Context, run *world.Run) (*CleanupInfo, error) {
	info := &CleanupInfo{
		RunID: run.RunID, WorkflowName: run.WorkflowName, Input: run.Input, Output: run.Output, Previous: run.Input,
		Attributes: run.Attributes, ExecutionContext: run.ExecutionContext, CreatedAt: run.CreatedAt, CompletedAt: run.CompletedAt,
	}
	ended := false
	var cursor string
	for {
		p, err := rs.w.ListEvents(ctx, &world.ListEventsParams{RunID: run.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor, Descending: true}})
		if err != nil {
			return nil, err
		}
		for _, ev := range p.Items {
			switch d := ev.Data.(type) {
			case *world.RunCompleted:
				ended = true
			case *world.StepCompleted:
				if ended {
					info.Previous = d.Result
					return info, nil
				}
			}
		}
		if !p.HasMore {
			return info, nil
		}
		cursor = p.Cursor
	}
}
