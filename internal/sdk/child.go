package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// childTokenPrefix starts the token of the hook a parent run waits on for
// a child run's outcome: the engine's own (IsInternalToken).
const childTokenPrefix = "skein-child:"

// IsInternalToken reports whether token is the token of a hook the engine
// makes for itself (the one on which a parent run receives a child run's
// outcome). Only the engine resumes such a hook: Client.ResumeHook refuses
// it, so that nobody can forge a child's outcome.
func IsInternalToken(token string) bool { return strings.HasPrefix(token, childTokenPrefix) }

// startChildStep is the built-in step that starts a child run for a parent
// workflow: starting a run is a side effect, so it happens in a step, once,
// with an idempotency key derived from the parent's hook token.
const startChildStep = engine.StartChildStep

type childStart struct {
	Workflow    string          `json:"workflow"`
	Input       json.RawMessage `json:"input,omitempty"`
	ParentRunID string          `json:"parentRunId"`
	RootRunID   string          `json:"rootRunId"`
	NotifyToken string          `json:"notifyToken"`
}

func (r *Registry) startChildStep() *engine.Step {
	return &engine.Step{
		Name:       startChildStep,
		MaxRetries: DefaultMaxRetries,
		Fn: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var in childStart
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, r.failure(&SerializationError{What: "child start", Err: err}, timeNow(ctx))
			}
			c := ClientFrom(ctx)
			if c == nil {
				return nil, r.failure(Fatal(errors.New("workflow: starting a child run needs a step context")), timeNow(ctx))
			}
			// The child's ID is derived from the step's, so that every
			// attempt creates the same run, and the parent's rest finds
			// one created by an attempt that was lost before it woke it
			// (engine.ChildRunID).
			var runID string
			if info, ok := engine.StepInfoFrom(ctx); ok {
				runID = engine.ChildRunID(info.RunID, info.StepID)
			}
			id, _, err := c.start(ctx, in.Workflow, in.Input, startOptions{
				runID: runID, key: in.NotifyToken,
				lineage: &engine.ExecutionContext{
					ParentRunID: in.ParentRunID, RootRunID: in.RootRunID, NotifyToken: in.NotifyToken,
				},
			})
			if err != nil {
				return nil, r.failure(err, timeNow(ctx))
			}
			return json.Marshal(id)
		},
	}
}

// childPromise settles when the child run ends (its outcome arrives on the
// parent's hook) or when starting it failed.
type childPromise struct {
	start *stepPromise
	hook  *engine.Hook
	reg   *Registry
}

func (p *childPromise) state() (int64, bool) {
	if order, done := p.start.state(); done && p.start.failed() {
		return order, true
	}
	if p.hook.Len() > 0 {
		_, order := p.hook.Payload(0)
		return order, true
	}
	return 0, false
}

func (p *childPromise) failed() bool {
	if _, done := p.start.state(); done && p.start.failed() {
		return true
	}
	_, err := p.outcome()
	return err != nil
}

func (p *childPromise) outcome() (json.RawMessage, error) {
	if _, done := p.start.state(); done && p.start.failed() {
		return p.start.outcome()
	}
	raw, _ := p.hook.Payload(0)
	var o engine.RunOutcome
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, &SerializationError{What: "child run outcome", Err: err}
	}
	switch o.Status {
	case world.RunStatusCompleted:
		return o.Output, nil
	case world.RunStatusCancelled:
		return nil, fmt.Errorf("child run %s: %w", o.RunID, ErrRunCancelled)
	}
	return nil, &RunFailedError{RunID: o.RunID, Code: o.ErrorCode, Cause: p.reg.decode(o.Error)}
}
