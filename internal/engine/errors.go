package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// Failure is a step or workflow error as it should be recorded: the SDK
// returns one from step functions to say whether to retry.
type Failure struct {
	// Data is the error as recorded in the log.
	Data *world.ErrorData
	// Fatal stops retries.
	Fatal bool
	// RetryAt, when set, is when to retry (overriding the backoff policy).
	RetryAt time.Time
}

func (f *Failure) Error() string {
	if f.Data == nil {
		return "step failed"
	}
	return f.Data.Message
}

// PermanentError reports a message that cannot be handled and must not be
// retried: malformed, or naming a run or step that does not exist. A
// consumer acknowledges it (and logs it) instead of redelivering.
type PermanentError struct {
	Reason string
	Err    error
}

func (e *PermanentError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("engine: permanent: %s: %v", e.Reason, e.Err)
	}
	return "engine: permanent: " + e.Reason
}

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err, or an error it wraps, is a
// *PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Error types the engine records.
const (
	TypePanic              = "PanicError"
	TypeStepNotRegistered  = "StepNotRegisteredError"
	TypeReplayDivergence   = "ReplayDivergenceError"
	TypeReplayTimeout      = "ReplayTimeoutError"
	TypeNotRegistered      = "WorkflowNotRegisteredError"
	TypeMaxDeliveries      = "MaxDeliveriesExceededError"
	TypeAttemptsExhausted  = "AttemptsExhaustedError"
	TypeExecutorLost       = "StepExecutorLostError"
	TypeFailedOnRequest    = "FailedOnRequestError"
	TypeStepTimeout        = "StepTimeoutError"
	stepNotRegisteredFmt   = "step %q is not registered"
	workflowNotRegistedFmt = "workflow %q is not registered"
)
