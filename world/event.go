package world

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventType names an event; the constants below are every type a log holds.
type EventType string

// Event types.
const (
	EventRunCreated    EventType = "run_created"
	EventRunStarted    EventType = "run_started"
	EventRunCompleted  EventType = "run_completed"
	EventRunFailed     EventType = "run_failed"
	EventRunCancelled  EventType = "run_cancelled"
	EventRunHeld       EventType = "run_held"
	EventStepCreated   EventType = "step_created"
	EventStepStarted   EventType = "step_started"
	EventStepCompleted EventType = "step_completed"
	EventStepFailed    EventType = "step_failed"
	EventStepRetrying  EventType = "step_retrying"
	EventHookCreated   EventType = "hook_created"
	EventHookConflict  EventType = "hook_conflict"
	EventHookReceived  EventType = "hook_received"
	EventHookDisposed  EventType = "hook_disposed"
	EventWaitCreated   EventType = "wait_created"
	EventWaitCompleted EventType = "wait_completed"
	// EventAttributeSet is declared in attribute.go.
)

// Terminal reports whether the event ends a run.
func (t EventType) Terminal() bool {
	return t == EventRunCompleted || t == EventRunFailed || t == EventRunCancelled
}

// Event is one entry of a run's log. Seq is dense and 1-based per run; it is
// the write fence. CorrelationID names the step, hook or wait the event
// concerns (empty for run events).
type Event struct {
	RunID         string
	EventID       string
	Seq           int64
	CorrelationID string
	CreatedAt     time.Time
	Data          EventData
}

// Type returns the event's type, taken from its payload.
func (e Event) Type() EventType {
	if e.Data == nil {
		return ""
	}
	return e.Data.eventType()
}

// Type returns the proposed event's type, taken from its payload (empty
// when Data is nil).
func (in EventInput) Type() EventType {
	if in.Data == nil {
		return ""
	}
	return in.Data.eventType()
}

// EventData is an event payload: one concrete type per EventType. Its
// types are this package's (NewEventData makes an empty one by type);
// Event.Type and EventInput.Type name it.
type EventData interface {
	eventType() EventType
	validate(correlationID string) error
}

// The payloads. Values produced by user code (inputs, outputs, payloads,
// metadata) are opaque serialized bytes.
type (
	// RunCreated creates a run in pending state.
	RunCreated struct {
		WorkflowName     string            `json:"workflowName"`
		DeploymentID     string            `json:"deploymentId,omitempty"`
		Input            json.RawMessage   `json:"input,omitempty"`
		ExecutionContext json.RawMessage   `json:"executionContext,omitempty"`
		Attributes       map[string]string `json:"attributes,omitempty"`
		// IdempotencyKey, when set, is unique among runs: a second run_created
		// with the same key is refused with a *RefusalError naming the first (Entity, Key).
		IdempotencyKey string `json:"idempotencyKey,omitempty"`
		// Secret is random bytes drawn when the run is created (from a
		// cryptographic source, never from the run ID or other public data).
		// The engine mixes it into the hook tokens the run generates, so that
		// they cannot be computed from the run ID, and replay draws the same
		// tokens because the secret is in the log. Runs created before it
		// existed have none; they keep tokens derived from the run ID alone.
		Secret []byte `json:"secret,omitempty"`
		// Version names the code that started the run (see CheckVersion):
		// a release, a VCS revision, a function version. Executors may be
		// configured to run only the versions they declare compatible.
		// Empty for a run whose starter declared none, and for runs created
		// before the field existed.
		Version string `json:"version,omitempty"`
	}
	// RunStarted moves a pending run to running.
	RunStarted struct{}
	// RunCompleted ends a run with its output.
	RunCompleted struct {
		Output json.RawMessage `json:"output,omitempty"`
		// Cleanup says that the run's workflow has a cleanup hook to run
		// now: the run's Cleanup becomes CleanupPending until a
		// run_cleaned_up records the hook's outcome.
		Cleanup bool `json:"cleanup,omitempty"`
	}
	// RunFailed ends a run with an error and an error code.
	RunFailed struct {
		Error     *ErrorData `json:"error"`
		ErrorCode string     `json:"errorCode,omitempty"`
		// Compensate asks for the run's completed steps to be compensated
		// after the end (Run.Compensate).
		Compensate bool `json:"compensate,omitempty"`
	}
	// RunCancelled ends a pending or running run. Compensate is as in
	// RunFailed.
	RunCancelled struct {
		Reason     string `json:"cancelReason,omitempty"`
		Compensate bool   `json:"compensate,omitempty"`
	}
	// RunHeld holds a run that cannot go on with the code deployed (its
	// replay diverged from its log): not an end, so the run is kept as it
	// is and can still be resumed, cancelled or failed. Attempt counts the
	// holds since the run last went on, and RetryAt is when the engine
	// replays it again (sooner on request). A run_started releases the run;
	// a terminal event ends it.
	RunHeld struct {
		Error     *ErrorData `json:"error"`
		ErrorCode string     `json:"errorCode"`
		Attempt   int        `json:"attempt,omitempty"`
		RetryAt   time.Time  `json:"retryAt,omitzero"`
	}
	// StepCreated creates a step in pending state. InputDigest, when set, is
	// a digest of the input as the workflow encoded it (the first 8 bytes of
	// its SHA-256 sum, in lowercase hex; at most 64 hex digits): replay compares
	// it with what the code asks for now, so that a step called with other
	// arguments at the same position (say, a map ranged in another order)
	// is caught instead of receiving another call's result. Logs written
	// before the field existed lack it, and replay then compares names only.
	StepCreated struct {
		StepName    string          `json:"stepName"`
		Input       json.RawMessage `json:"input,omitempty"`
		InputDigest string          `json:"inputDigest,omitempty"`
		Patches     []string        `json:"patches,omitempty"`
		// Compensation names the step that undoes this one, when it
		// declared one: the World keeps it on the step (Step.Compensation).
		Compensation string `json:"compensation,omitempty"`
	}
	// StepStarted moves a step to running and counts an attempt. LeaseTTL is
	// how long the attempt is exclusive (DefaultStepLease when zero); the World
	// fills in Attempt, Interrupted (as the step has them after this start,
	// see Step) and LeaseExpiresAt. Queued marks an attempt started by the
	// executor of a queue message that stays unacknowledged until the
	// outcome is recorded: should that executor die, the message's redelivery
	// runs the step again, so no one else need watch the lease.
	StepStarted struct {
		StepName       string        `json:"stepName,omitempty"`
		Attempt        int           `json:"attempt,omitempty"`
		Interrupted    int           `json:"interrupted,omitempty"`
		LeaseTTL       time.Duration `json:"leaseTtl,omitempty"`
		LeaseExpiresAt time.Time     `json:"leaseExpiresAt,omitzero"`
		Queued         bool          `json:"queued,omitempty"`
	}
	// StepCompleted ends a step with its result.
	StepCompleted struct {
		StepName string          `json:"stepName,omitempty"`
		Result   json.RawMessage `json:"result,omitempty"`
	}
	// StepFailed ends a step; it will not be retried.
	StepFailed struct {
		StepName string     `json:"stepName,omitempty"`
		Error    *ErrorData `json:"error"`
	}
	// StepRetrying moves a step back to pending until RetryAfter.
	StepRetrying struct {
		StepName   string     `json:"stepName,omitempty"`
		Error      *ErrorData `json:"error"`
		RetryAfter time.Time  `json:"retryAfter,omitzero"`
	}
	// HookCreated creates an active hook holding Token.
	HookCreated struct {
		Token     string          `json:"token"`
		Metadata  json.RawMessage `json:"metadata,omitempty"`
		IsWebhook bool            `json:"isWebhook,omitempty"`
		Patches   []string        `json:"patches,omitempty"`
	}
	// HookConflict records that a hook_created was refused because another
	// active hook holds the token. Worlds write it in place of hook_created.
	HookConflict struct {
		Token            string   `json:"token"`
		ConflictingRunID string   `json:"conflictingRunId,omitempty"`
		Patches          []string `json:"patches,omitempty"`
	}
	// HookReceived delivers one payload to an active hook. Token, when the
	// caller sets it, is the token it found the hook by: a hook holding
	// another token refuses the event with ErrCorrupt (the token's index is
	// damaged). The event recorded carries the hook's token.
	HookReceived struct {
		Token   string          `json:"token,omitempty"`
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	// HookDisposed deletes a hook and frees its token.
	HookDisposed struct {
		Token string `json:"token,omitempty"`
	}
	// WaitCreated creates a wait that elapses at ResumeAt.
	WaitCreated struct {
		ResumeAt time.Time `json:"resumeAt"`
		Patches  []string  `json:"patches,omitempty"`
	}
	// WaitCompleted marks a wait elapsed.
	WaitCompleted struct {
		ResumeAt time.Time `json:"resumeAt,omitzero"`
	}
)

// EventType implementations.
func (*RunCreated) eventType() EventType    { return EventRunCreated }
func (*RunStarted) eventType() EventType    { return EventRunStarted }
func (*RunCompleted) eventType() EventType  { return EventRunCompleted }
func (*RunFailed) eventType() EventType     { return EventRunFailed }
func (*RunCancelled) eventType() EventType  { return EventRunCancelled }
func (*RunHeld) eventType() EventType       { return EventRunHeld }
func (*StepCreated) eventType() EventType   { return EventStepCreated }
func (*StepStarted) eventType() EventType   { return EventStepStarted }
func (*StepCompleted) eventType() EventType { return EventStepCompleted }
func (*StepFailed) eventType() EventType    { return EventStepFailed }
func (*StepRetrying) eventType() EventType  { return EventStepRetrying }
func (*HookCreated) eventType() EventType   { return EventHookCreated }
func (*HookConflict) eventType() EventType  { return EventHookConflict }
func (*HookReceived) eventType() EventType  { return EventHookReceived }
func (*HookDisposed) eventType() EventType  { return EventHookDisposed }
func (*WaitCreated) eventType() EventType   { return EventWaitCreated }
func (*WaitCompleted) eventType() EventType { return EventWaitCompleted }

// NewEventData returns an empty payload for t, or an ErrInvalid error for an
// unknown type.
func NewEventData(t EventType) (EventData, error) {
	switch t {
	case EventRunCreated:
		return &RunCreated{}, nil
	case EventRunStarted:
		return &RunStarted{}, nil
	case EventRunCompleted:
		return &RunCompleted{}, nil
	case EventRunFailed:
		return &RunFailed{}, nil
	case EventRunCancelled:
		return &RunCancelled{}, nil
	case EventRunHeld:
		return &RunHeld{}, nil
	case EventStepCreated:
		return &StepCreated{}, nil
	case EventStepStarted:
		return &StepStarted{}, nil
	case EventStepCompleted:
		return &StepCompleted{}, nil
	case EventStepFailed:
		return &StepFailed{}, nil
	case EventStepRetrying:
		return &StepRetrying{}, nil
	case EventHookCreated:
		return &HookCreated{}, nil
	case EventHookConflict:
		return &HookConflict{}, nil
	case EventHookReceived:
		return &HookReceived{}, nil
	case EventHookDisposed:
		return &HookDisposed{}, nil
	case EventWaitCreated:
		return &WaitCreated{}, nil
	case EventWaitCompleted:
		return &WaitCompleted{}, nil
	case EventAttributeSet:
		return &AttributeSet{}, nil
	case EventRunDeactivated:
		return &RunDeactivated{}, nil
	case EventRunCleanedUp:
		return &RunCleanedUp{}, nil
	case EventCompStarted:
		return &CompStarted{}, nil
	case EventCompRetryScheduled:
		return &CompRetryScheduled{}, nil
	case EventCompSucceeded:
		return &CompSucceeded{}, nil
	case EventCompFailed:
		return &CompFailed{}, nil
	}
	return nil, fmt.Errorf("%w: unknown event type %q", ErrInvalid, t)
}

// eventJSON is the wire and storage form of an Event.
type eventJSON struct {
	RunID         string          `json:"runId"`
	EventID       string          `json:"eventId"`
	Seq           int64           `json:"seq"`
	EventType     EventType       `json:"eventType"`
	CorrelationID string          `json:"correlationId,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	EventData     json.RawMessage `json:"eventData,omitempty"`
}

// MarshalJSON encodes the event with its type and payload.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("%w: event without data", ErrInvalid)
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(eventJSON{
		RunID: e.RunID, EventID: e.EventID, Seq: e.Seq, EventType: e.Data.eventType(),
		CorrelationID: e.CorrelationID, CreatedAt: e.CreatedAt, EventData: data,
	})
}

// UnmarshalJSON decodes an event; an unknown type is an ErrInvalid error.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: event: %v", ErrInvalid, err)
	}
	data, err := NewEventData(j.EventType)
	if err != nil {
		return err
	}
	if len(j.EventData) > 0 && string(j.EventData) != "null" {
		if err := json.Unmarshal(j.EventData, data); err != nil {
			return fmt.Errorf("%w: %s payload: %v", ErrInvalid, j.EventType, err)
		}
	}
	*e = Event{RunID: j.RunID, EventID: j.EventID, Seq: j.Seq, CorrelationID: j.CorrelationID, CreatedAt: j.CreatedAt, Data: data}
	return nil
}
