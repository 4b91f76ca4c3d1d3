package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// fatalError is a step error that must not be retried, built by Fatal.
// It is recorded as FatalError.
type fatalError struct{ Err error }

// Fatal marks err as fatal: the step fails at once, without retries. It is
// for steps: a workflow's returned error fails its run whether or not it is
// fatal (workflows are not retried), so a workflow returns its error as is.
func Fatal(err error) error {
	if err == nil {
		err = errors.New("fatal error")
	}
	return &fatalError{Err: err}
}

func (e *fatalError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *fatalError) Unwrap() error { return e.Err }

// retryableError is a step error to retry at a given time, whatever the
// step's backoff says, built by RetryAfter or RetryAt. It is recorded as
// RetryableError.
type retryableError struct {
	Err error
	At  time.Time // zero: After from the failure
	// After is the delay when At is zero.
	After time.Duration
}

// RetryAfter asks for the step to be retried after d (if retries remain).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryableError{Err: err, After: d}
}

// RetryAt asks for the step to be retried at t (if retries remain).
func RetryAt(err error, t time.Time) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryableError{Err: err, At: t}
}

func (e *retryableError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *retryableError) Unwrap() error { return e.Err }

// SerializationError reports a value that could not be encoded or decoded as
// JSON. It is never retried: a step whose arguments or result do not
// serialize fails at once.
//
// A hook's payload that does not decode as the hook's type is one too, with
// Token and HookID set: it is what the hook's Receive (or its future's Get)
// returns. The sender (ResumeHook, the CLI's hooks resume) cannot know that
// type, so the check is the workflow's. The payload is consumed, so the next
// Receive gets the next one: a workflow may log it and wait again. A run
// whose workflow returns it, or an error wrapping it, fails with
// HOOK_PAYLOAD_INVALID.
type SerializationError struct {
	// What names the value: `arguments of step "charge"`, "workflow
	// input", "hook metadata", ...; for a hook's payload, the Go type the
	// hook expects, such as "main.Approval".
	What string
	// Decode is set when the value could not be decoded (JSON to Go), unset
	// when it could not be encoded.
	Decode bool
	// Token and HookID, set for a hook's payload, are the hook's token and
	// ID.
	Token, HookID string
	Err           error
}

func (e *SerializationError) Error() string {
	switch {
	case e.hookPayload():
		return fmt.Sprintf("hook %q received a payload that does not decode as %s: %v", e.Token, e.What, e.Err)
	case e.Decode:
		return fmt.Sprintf("failed to decode %s: %v", e.What, e.Err)
	}
	return fmt.Sprintf("failed to serialize %s: %v", e.What, e.Err)
}

// hookPayload reports whether e is a hook's payload that did not decode.
func (e *SerializationError) hookPayload() bool { return e.Token != "" || e.HookID != "" }

// Unwrap returns the underlying error.
func (e *SerializationError) Unwrap() error { return e.Err }

// badInput is a value a caller gave that is no JSON value (a start's input,
// a hook's payload): a bad request, matching world.ErrInvalid, and e.
func badInput(e *SerializationError) error { return fmt.Errorf("%w: %w", world.ErrInvalid, e) }

// HookConflictError is returned by a hook whose token another run's active
// hook holds.
type HookConflictError struct {
	Token            string
	ConflictingRunID string
}

func (e *HookConflictError) Error() string {
	return fmt.Sprintf("hook token %q is already in use by another workflow (run %s)", e.Token, e.ConflictingRunID)
}

// StepError is what a workflow gets from a step that failed for good: the
// step, its last attempt, and the error it returned (typed again after its
// round trip through the log).
type StepError struct {
	Step    string
	StepID  string
	Attempt int
	Err     error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed (attempt %d): %v", e.Step, e.Attempt, e.Err)
}

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// ErrRunCancelled is returned for a run that was cancelled.
var ErrRunCancelled = errors.New("workflow: run cancelled")

// RunFailedError is returned for a run that failed: Code is the run's error
// code (USER_ERROR, RUNTIME_ERROR, REPLAY_DIVERGENCE, ...), Cause its error.
type RunFailedError struct {
	RunID string
	Code  string
	Cause error
}

func (e *RunFailedError) Error() string {
	return fmt.Sprintf("run %s failed (%s): %v", e.RunID, e.Code, e.Cause)
}

// Unwrap returns the cause.
func (e *RunFailedError) Unwrap() error { return e.Cause }

// Is reports whether target is world.ErrLimitExceeded and the run failed
// for passing one of its limits (codes MAX_EVENTS_EXCEEDED and
// LIMIT_EXCEEDED): the limit's *world.LimitError itself does not survive
// the log, its code does.
func (e *RunFailedError) Is(target error) bool {
	return target == world.ErrLimitExceeded && (e.Code == world.CodeMaxEventsExceeded || e.Code == world.CodeLimitExceeded)
}

// allFailedError is what Any returns when every future failed: a join of
// their errors (errors.As and errors.Is look into each) that says how many.
// It is recorded as AllFailedError, with its members.
type allFailedError struct{ Errors []error }

func (e *allFailedError) Error() string {
	return fmt.Sprintf("all %d futures failed: %v", len(e.Errors), errors.Join(e.Errors...))
}

// Unwrap returns the errors.
func (e *allFailedError) Unwrap() []error { return e.Errors }

// stepTimeoutError (recorded as StepTimeoutError) is the failure of a step
// attempt that ran past its StepOptions.Timeout. Err is the error the step
// function returned after its deadline, if it returned one within the grace period (a result
// returned then is discarded: the attempt has timed out). It matches
// context.DeadlineExceeded with errors.Is.
type stepTimeoutError struct {
	Step    string
	Attempt int
	Timeout time.Duration
	Err     error
}

func (e *stepTimeoutError) Error() string {
	return fmt.Sprintf("step %q attempt %d timed out after %s", e.Step, e.Attempt, e.Timeout)
}

// Unwrap returns what the step function returned, if anything.
func (e *stepTimeoutError) Unwrap() error { return e.Err }

// Is makes a timeout match context.DeadlineExceeded.
func (e *stepTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Error is an error read back from the log whose Go type is not known here:
// it keeps the recorded type name, message, stack (for panics) and cause.
type Error struct {
	Type    string
	Message string
	Stack   string
	Code    string
	Details json.RawMessage
	Cause   error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is keeps context errors recognisable after a round trip.
func (e *Error) Is(target error) bool {
	switch e.Type {
	case typeCanceled:
		return target == context.Canceled
	case typeDeadline:
		return target == context.DeadlineExceeded
	}
	return false
}

// Recorded error type names.
const (
	typeFatal         = "FatalError"
	typeRetryable     = "RetryableError"
	typeSerialization = "SerializationError"
	typeHookConflict  = "HookConflictError"
	typeHookNotFound  = "HookNotFoundError"
	typeHookPayload   = "HookPayloadError"
	typeStep          = "StepError"
	typeRunFailed     = "RunFailedError"
	typeRunCancelled  = "RunCancelledError"
	typeAllFailed     = "AllFailedError"
	typeCompensation  = "CompensationError"
	typeJoin          = "*errors.joinError" // what %T says of errors.Join's result
	typeStepTimeout   = engine.TypeStepTimeout
	typeCanceled      = "context.Canceled"
	typeDeadline      = "context.DeadlineExceeded"
)

// codec turns errors into world.ErrorData and back, keeping the SDK's types
// and the types registered with Registry.RegisterError.
type codec struct {
	byName map[string]reflect.Type
	byType map[reflect.Type]string
	// sentinels are the values registered with RegisterSentinel, by name
	// and by value.
	sentinels     map[string]error
	sentinelNames map[error]string
}

func newCodec() codec {
	return codec{byName: make(map[string]reflect.Type), byType: make(map[reflect.Type]string),
		sentinels: make(map[string]error), sentinelNames: make(map[error]string)}
}

func details(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (c *codec) encode(err error) *world.ErrorData {
	if err == nil {
		return nil
	}
	if name, ok := c.sentinel(err); ok {
		return &world.ErrorData{Type: name, Message: err.Error()}
	}
	d := &world.ErrorData{Type: fmt.Sprintf("%T", err), Message: err.Error()}
	switch e := err.(type) {
	case *fatalError:
		d.Type, d.Fatal, d.Cause = typeFatal, true, c.encode(e.Err)
	case *retryableError:
		d.Type, d.Cause = typeRetryable, c.encode(e.Err)
		d.Details = details(map[string]any{"at": e.At, "after": e.After})
	case *SerializationError:
		if e.hookPayload() {
			d.Type, d.Code, d.Cause = typeHookPayload, world.CodeHookPayloadInvalid, c.encode(e.Err)
			d.Details = details(map[string]string{"token": e.Token, "hookId": e.HookID, "type": e.What})
			break
		}
		d.Type, d.Fatal, d.Cause = typeSerialization, true, c.encode(e.Err)
		d.Details = details(map[string]any{"what": e.What, "decode": e.Decode})
	case *HookConflictError:
		d.Type = typeHookConflict
		d.Details = details(map[string]string{"token": e.Token, "conflictingRunId": e.ConflictingRunID})
	case *RequestError:
		c.encodeRequest(e, d)
	case *StepError:
		d.Type, d.Cause = typeStep, c.encode(e.Err)
		d.Details = details(map[string]any{"step": e.Step, "stepId": e.StepID, "attempt": e.Attempt})
	case *RunFailedError:
		d.Type, d.Code, d.Cause = typeRunFailed, e.Code, c.encode(e.Cause)
		d.Details = details(map[string]string{"runId": e.RunID})
	case *stepTimeoutError:
		d.Type, d.Code, d.Cause = typeStepTimeout, world.CodeStepTimeout, c.encode(e.Err)
		d.Details = details(map[string]any{"step": e.Step, "attempt": e.Attempt, "timeout": e.Timeout})
	case *allFailedError:
		d.Type, d.Errors = typeAllFailed, c.encodeAll(e.Errors)
		if len(e.Errors) > 0 {
			d.Cause = d.Errors[0] // what logs before Errors had
		}
	case *CompensationError:
		d.Type, d.Cause = typeCompensation, c.encode(e.Err)
		d.Details = details(map[string]string{"step": e.Step, "stepId": e.StepID})
	case *Error:
		d.Type, d.Stack, d.Code, d.Details, d.Cause = e.Type, e.Stack, e.Code, e.Details, c.encode(e.Cause)
	case *engine.Failure:
		if e.Data != nil {
			return e.Data
		}
	case *world.LimitError:
		// Its code survives the log: a run failed by it says which limit.
		d.Code = e.Code()
	default:
		switch {
		case err == ErrRunCancelled:
			d.Type = typeRunCancelled
		case err == context.Canceled:
			d.Type = typeCanceled
		case err == context.DeadlineExceeded:
			d.Type = typeDeadline
		default:
			if name, ok := c.byType[reflect.TypeOf(err)]; ok {
				d.Type = name
				if b, jerr := json.Marshal(err); jerr == nil {
					d.Details = b
				}
			} else if multi, ok := err.(interface{ Unwrap() []error }); ok {
				d.Errors = c.encodeAll(multi.Unwrap())
			} else {
				d.Cause = c.encode(errors.Unwrap(err))
			}
		}
	}
	return d
}

func (c *codec) decode(d *world.ErrorData) error {
	if d == nil {
		return nil
	}
	if s, ok := c.sentinels[d.Type]; ok {
		return s
	}
	cause := c.decode(d.Cause)
	orMessage := func() error {
		if cause != nil {
			return cause
		}
		return &Error{Message: d.Message}
	}
	switch d.Type {
	case typeFatal:
		return &fatalError{Err: orMessage()}
	case typeRetryable:
		var x struct {
			At    time.Time     `json:"at"`
			After time.Duration `json:"after"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &retryableError{Err: orMessage(), At: x.At, After: x.After}
	case typeSerialization:
		var x struct {
			What   string `json:"what"`
			Decode bool   `json:"decode"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &SerializationError{What: x.What, Decode: x.Decode, Err: orMessage()}
	case typeHookConflict:
		var x struct {
			Token            string `json:"token"`
			ConflictingRunID string `json:"conflictingRunId"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &HookConflictError{Token: x.Token, ConflictingRunID: x.ConflictingRunID}
	case typeHookNotFound:
		var x struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &RequestError{Kind: world.ErrNotFound, Token: x.Token}
	case typeHookPayload:
		var x struct {
			Token  string `json:"token"`
			HookID string `json:"hookId"`
			Type   string `json:"type"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &SerializationError{What: x.Type, Decode: true, Token: x.Token, HookID: x.HookID, Err: orMessage()}
	case typeStep:
		var x struct {
			Step    string `json:"step"`
			StepID  string `json:"stepId"`
			Attempt int    `json:"attempt"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &StepError{Step: x.Step, StepID: x.StepID, Attempt: x.Attempt, Err: orMessage()}
	case typeRunFailed:
		var x struct {
			RunID string `json:"runId"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &RunFailedError{RunID: x.RunID, Code: d.Code, Cause: orMessage()}
	case typeRunCancelled:
		return ErrRunCancelled
	case typeCompensation:
		var x struct {
			Step   string `json:"step"`
			StepID string `json:"stepId"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &CompensationError{Step: x.Step, StepID: x.StepID, Err: orMessage()}
	case typeStepTimeout:
		var x struct {
			Step    string        `json:"step"`
			Attempt int           `json:"attempt"`
			Timeout time.Duration `json:"timeout"`
		}
		_ = json.Unmarshal(d.Details, &x)
		return &stepTimeoutError{Step: x.Step, Attempt: x.Attempt, Timeout: x.Timeout, Err: cause}
	}
	if len(d.Errors) > 0 {
		return c.decodeMulti(d, cause)
	}
	if t, ok := c.byName[d.Type]; ok {
		v := reflect.New(t.Elem())
		if len(d.Details) == 0 || json.Unmarshal(d.Details, v.Interface()) == nil {
			if err, ok := v.Interface().(error); ok {
				return err
			}
		}
	}
	return &Error{Type: d.Type, Message: d.Message, Stack: d.Stack, Code: d.Code, Details: d.Details, Cause: cause}
}

// failure turns a step function's error into what the engine records.
func (c *codec) failure(err error, now time.Time) *engine.Failure {
	f := &engine.Failure{Data: c.encode(err)}
	var fatal *fatalError
	var ser *SerializationError
	var retry *retryableError
	switch {
	case errors.As(err, &fatal), errors.As(err, &ser) && !ser.hookPayload():
		f.Fatal = true
	case errors.As(err, &retry):
		f.RetryAt = retry.At
		if f.RetryAt.IsZero() {
			f.RetryAt = now.Add(retry.After)
		}
	}
	return f
}

// ErrHookDisposed is returned when waiting on a hook the workflow disposed.
var ErrHookDisposed = errors.New("workflow: hook disposed")
