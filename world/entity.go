package world

import (
	"encoding/json"
	"time"
)

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run states.
const (
	RunStatusPending   RunStatus = "pending"
	RunStatusRunning   RunStatus = "running"
	RunStatusCompleted RunStatus = "completed"
	RunStatusFailed    RunStatus = "failed"
	RunStatusCancelled RunStatus = "cancelled"
	// RunStatusHeld is a run that cannot go on with the code deployed (see
	// RunHeld): not finished, waiting for a retry, a cancellation or an
	// explicit failure.
	RunStatusHeld RunStatus = "held"
)

// Terminal reports whether no further transition is possible.
func (s RunStatus) Terminal() bool {
	return s == RunStatusCompleted || s == RunStatusFailed || s == RunStatusCancelled
}

// Valid reports whether s is a known run status.
func (s RunStatus) Valid() bool {
	switch s {
	case RunStatusPending, RunStatusRunning, RunStatusHeld, RunStatusCompleted, RunStatusFailed, RunStatusCancelled:
		return true
	}
	return false
}

// StepStatus is the lifecycle state of a step.
type StepStatus string

// Step states. step_retrying moves a step back to pending.
const (
	StepStatusPending   StepStatus = "pending"
	StepStatusRunning   StepStatus = "running"
	StepStatusCompleted StepStatus = "completed"
	StepStatusFailed    StepStatus = "failed"
)

// Terminal reports whether no further transition is possible.
// The compensation states count as terminal: the step's own outcome was
// step_completed, and no step_* event applies to it any more.
func (s StepStatus) Terminal() bool {
	switch s {
	case StepStatusCompleted, StepStatusFailed, StepStatusCompensating, StepStatusCompensated, StepStatusCompensationFailed:
		return true
	}
	return false
}

// WaitStatus is the lifecycle state of a wait.
type WaitStatus string

// Wait states.
const (
	WaitStatusWaiting   WaitStatus = "waiting"
	WaitStatusCompleted WaitStatus = "completed"
)

// Run error codes (Run.ErrorCode, RunFailed.ErrorCode), stable strings that
// clients and the CLI show and test.
const (
	CodeUserError             = "USER_ERROR"
	CodeRuntimeError          = "RUNTIME_ERROR"
	CodeMaxEventsExceeded     = "MAX_EVENTS_EXCEEDED"
	CodeMaxDeliveriesExceeded = "MAX_DELIVERIES_EXCEEDED"
	CodeReplayTimeout         = "REPLAY_TIMEOUT"
	CodeReplayDivergence      = "REPLAY_DIVERGENCE"
	CodeDeploymentMismatch    = "DEPLOYMENT_MISMATCH"
	// CodeStepExecutorLost: a step's executor was lost (its process died or
	// was cut off before it recorded an outcome) more often than the engine
	// allows. Losses do not count against the step's retries.
	CodeStepExecutorLost = "STEP_EXECUTOR_LOST"
)

// CodeWorkflowAPIMisuse fails a run whose workflow code used the workflow
// API wrongly (from a goroutine it started), a mistake in the code that
// replaying cannot fix.
const CodeWorkflowAPIMisuse = "WORKFLOW_API_MISUSE"

// CodeHookPayloadInvalid fails a run whose workflow gave up on a hook
// payload that did not decode as the hook's type.
const CodeHookPayloadInvalid = "HOOK_PAYLOAD_INVALID"

// CodeStepTimeout marks a step attempt that ran past its per-attempt
// timeout, and a run that failed because a step timed out on its last
// attempt.
const CodeStepTimeout = "STEP_TIMEOUT"

// ErrorData is an error as recorded in the log: data, not an error value
// (the SDK decodes it into its error types, workflow.Error for a type it
// does not know). It keeps enough structure for typed errors to survive a
// round trip: the SDK maps Type back to its error types (FatalError,
// SerializationError, ...), Cause chains nest, and Errors holds the
// members of an error that wraps several (errors.Join, a fmt.Errorf with
// more than one %w), each recorded the same way.
type ErrorData struct {
	Type    string          `json:"type,omitempty"`
	Message string          `json:"message"`
	Stack   string          `json:"stack,omitempty"`
	Fatal   bool            `json:"fatal,omitempty"`
	Code    string          `json:"code,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Cause   *ErrorData      `json:"cause,omitempty"`
	Errors  []*ErrorData    `json:"errors,omitempty"`
}

// Run is the materialized state of a workflow run.
type Run struct {
	RunID            string            `json:"runId"`
	WorkflowName     string            `json:"workflowName"`
	DeploymentID     string            `json:"deploymentId,omitempty"`
	Status           RunStatus         `json:"status"`
	Input            json.RawMessage   `json:"input,omitempty"`
	Output           json.RawMessage   `json:"output,omitempty"`
	Error            *ErrorData        `json:"error,omitempty"`
	ErrorCode        string            `json:"errorCode,omitempty"`
	CancelReason     string            `json:"cancelReason,omitempty"`
	ExecutionContext json.RawMessage   `json:"executionContext,omitempty"`
	Attributes       map[string]string `json:"attributes,omitempty"`
	IdempotencyKey   string            `json:"idempotencyKey,omitempty"`
	// Version is the version of the code that started the run
	// (RunCreated.Version), empty when none was recorded.
	Version string `json:"version,omitempty"`
	// Hold says why a held run is held; set exactly when Status is
	// RunStatusHeld.
	Hold *RunHold `json:"hold,omitempty"`
	// LastSeq is the sequence number of the run's newest event: the write fence.
	LastSeq int64 `json:"lastSeq"`
	// PayloadBytes is the size of every payload the run's log holds, each
	// measured as stored: its JSON as every World writes it and every read
	// returns it (compact, with encoding/json's escapes), an error's text,
	// an encrypting World's payloads sealed. It is a function of the
	// committed events, the same on every read path and in a fold of the
	// log (FoldEvents). Limits.MaxRunBytes bounds it.
	PayloadBytes int64     `json:"payloadBytes,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	StartedAt    time.Time `json:"startedAt,omitzero"`
	CompletedAt  time.Time `json:"completedAt,omitzero"`
	// DeactivatedAt is when the finished run came to rest (run_deactivated):
	// nothing of it pending or running any more. Zero until then.
	DeactivatedAt time.Time `json:"deactivatedAt,omitzero"`
	// Cleanup is the state of a completed run's cleanup hook: empty when
	// there is none, else CleanupPending, CleanupDone or CleanupFailed.
	Cleanup string `json:"cleanup,omitempty"`
	// Compensate is set when the run's terminal event asked for its
	// completed steps to be compensated (RunFailed.Compensate,
	// RunCancelled.Compensate).
	Compensate bool `json:"compensate,omitempty"`
	// Compensations counts the run's compensations (see compensation.go).
	Compensations Compensations `json:"compensations,omitzero"`
}

// RunHold is what a held run waits on: the error that stopped it (a replay
// divergence), how many times in a row it was held, since when, and when
// it is retried.
type RunHold struct {
	ErrorCode string     `json:"errorCode"`
	Error     *ErrorData `json:"error"`
	Attempt   int        `json:"attempt,omitempty"`
	// Since is when the run was first held, kept while it stays held.
	Since   time.Time `json:"since"`
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// Step is the materialized state of one step invocation.
type Step struct {
	RunID      string          `json:"runId"`
	StepID     string          `json:"stepId"`
	StepName   string          `json:"stepName"`
	Status     StepStatus      `json:"status"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      *ErrorData      `json:"error,omitempty"`
	Attempt    int             `json:"attempt"`
	RetryAfter time.Time       `json:"retryAfter,omitzero"`
	// LeaseExpiresAt bounds the current attempt's exclusivity: until then no
	// other executor may start the step (see StepStarted and Apply).
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	StartedAt      time.Time `json:"startedAt,omitzero"` // first start; set once
	CompletedAt    time.Time `json:"completedAt,omitzero"`

	// Interrupted counts the attempts that ended with no outcome: a later
	// step_started took the step over while it was still running under an
	// expired lease, so the attempt's executor was lost (killed, crashed,
	// cut off). Attempt counts every start, interrupted or not, and names
	// the current one (RenewStepLease); Attempt-Interrupted is the attempt
	// as a retry policy counts it: 1 for the first, 2 for the first retry.
	Interrupted int `json:"interrupted,omitempty"`
	// Compensation is the compensation the step declared
	// (StepCreated.Compensation) and its progress; nil when none.
	Compensation *StepCompensation `json:"compensation,omitempty"`
}

// Hook is an active hook. A disposed hook no longer exists in storage.
type Hook struct {
	RunID     string          `json:"runId"`
	HookID    string          `json:"hookId"`
	Token     string          `json:"token"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	IsWebhook bool            `json:"isWebhook,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Wait is the materialized state of a sleep. No call reads it alone: Apply
// judges wait events against it (State.Wait), and Append returns it
// (EventResult.Wait).
type Wait struct {
	RunID       string     `json:"runId"`
	WaitID      string     `json:"waitId"`
	Status      WaitStatus `json:"status"`
	ResumeAt    time.Time  `json:"resumeAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	CompletedAt time.Time  `json:"completedAt,omitzero"`
}
