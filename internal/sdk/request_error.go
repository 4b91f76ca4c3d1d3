package sdk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/skeinflow/skein/world"
)

// ErrUnknownWorkflow is the Kind of a *RequestError for a workflow name the
// Registry does not hold; errors.Is matches it.
var ErrUnknownWorkflow = errors.New("workflow: unknown workflow")

// RequestError is what a Client (and the replay checks) return for a
// request they refuse; nothing is created or changed then. Kind tells the
// case, and errors.Is matches it (Unwrap returns Kind and Err):
//
//   - world.ErrNotFound: no active hook holds Token (ResumeHook,
//     GetHookByToken): unknown, disposed, or its run has finished.
//   - world.ErrConflict: the start's idempotency key Key already started
//     run RunID of workflow Workflow, which this start (of Requested) does
//     not repeat: another workflow, or the same one with another input
//     (InputDiffers).
//   - world.ErrInvalid: the input of workflow Workflow does not decode into
//     its input type (Err says why); no run was created.
//   - ErrUnknownWorkflow: the Registry does not hold workflow Workflow (no
//     run was created). The replay checks set RunID (the run whose log
//     names it) and Registered (the names the Registry holds).
type RequestError struct {
	// Kind is world.ErrNotFound, world.ErrConflict, world.ErrInvalid or
	// ErrUnknownWorkflow.
	Kind error
	// Token is the hook token (world.ErrNotFound).
	Token string
	// Key is the idempotency key (world.ErrConflict); RunID the run it
	// started, or the run whose log names an unknown workflow; Workflow the
	// workflow the request is about (the key's run's, for a conflict).
	Key, RunID, Workflow string
	// Requested is the workflow a conflicting start asked for.
	Requested string
	// InputDiffers is set on a conflict when the workflows agree and the
	// inputs do not.
	InputDiffers bool
	// Registered, set by the replay checks for an unknown workflow, holds
	// the names the Registry holds.
	Registered []string
	// Err is the cause: the decoding error of an invalid input.
	Err error
}

func (e *RequestError) Error() string {
	wf, key := clipped(e.Workflow), clipped(e.Key)
	switch e.Kind {
	case world.ErrNotFound:
		return fmt.Sprintf("hook with token %s not found", clipped(e.Token))
	case world.ErrConflict:
		if e.InputDiffers {
			return fmt.Sprintf("workflow: idempotency key %s already started run %s of workflow %s with another input "+
				"(a key names one start: give another input its own key)", key, e.RunID, wf)
		}
		return fmt.Sprintf("workflow: idempotency key %s already started run %s of workflow %s, not %s", key, e.RunID, wf, clipped(e.Requested))
	case world.ErrInvalid:
		return fmt.Sprintf("workflow: input of workflow %s does not decode into its input type: %v (no run created)", wf, e.Err)
	case ErrUnknownWorkflow:
		return unknownWorkflowMessage(e)
	}
	if e.Err != nil {
		return fmt.Sprintf("workflow: request refused (%v): %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("workflow: request refused: %v", e.Kind)
}

// clipped is s quoted, cut to its first 100 characters and its length
// when longer than 200 bytes: names, keys and tokens come from callers.
func clipped(s string) string {
	if len(s) <= 200 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%.100q... (%d bytes)", s, len(s))
}

// unknownWorkflowMessage is the message of an ErrUnknownWorkflow refusal.
func unknownWorkflowMessage(e *RequestError) string {
	wf := clipped(e.Workflow)
	switch {
	case e.RunID != "":
		return fmt.Sprintf("workflow: run %s is of workflow %s, which is not registered with the Registry (it holds %s)",
			e.RunID, wf, quotedList(e.Registered))
	case e.Registered != nil:
		return fmt.Sprintf("workflow: workflow %s is not registered with the Registry (it holds %s)", wf, quotedList(e.Registered))
	}
	return fmt.Sprintf("workflow: Start: workflow %s is not registered with the client's Registry (no run created; use StartUnregistered to start a workflow another service runs)", wf)
}

// Unwrap returns Kind and the cause, so that errors.Is matches the kind
// and errors.As finds the cause's types.
func (e *RequestError) Unwrap() []error {
	out := make([]error, 0, 2)
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// quotedList is names quoted and joined, or "no workflow".
func quotedList(names []string) string {
	if len(names) == 0 {
		return "no workflow"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Recorded names of the requests' refusals, as logs written before they
// were one type hold them (a step that returned one).
const (
	typeIdempotencyConflict = "*workflow.IdempotencyConflictError"
	typeInput               = "*workflow.InputError"
	typeUnknownWorkflow     = "*workflow.UnknownWorkflowError"
)

// encodeRequest records a *RequestError as its former type was recorded:
// a hook not found with its token, the others under their former Go type
// name with their cause.
func (c *codec) encodeRequest(e *RequestError, d *world.ErrorData) {
	switch e.Kind {
	case world.ErrNotFound:
		d.Type = typeHookNotFound
		d.Details = details(map[string]string{"token": e.Token})
		return
	case world.ErrConflict:
		d.Type = typeIdempotencyConflict
	case world.ErrInvalid:
		d.Type = typeInput
	case ErrUnknownWorkflow:
		d.Type = typeUnknownWorkflow
	}
	d.Cause = c.encode(e.Err)
}
