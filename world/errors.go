package world

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every World maps its native errors onto these, so callers
// test with errors.Is regardless of the backend. The HTTP-style status each one
// stands for is given by Status.
var (
	// ErrNotFound (404): the run, step, hook, wait, stream or message does not exist.
	ErrNotFound = errors.New("world: not found")
	// ErrConflict (409): the write duplicates a creating or terminal event, or
	// would move an entity out of a terminal state.
	ErrConflict = errors.New("world: conflict")
	// ErrGone (410): the write targets a run that has already finished, or
	// the read needs a part of a run that has expired (an *ExpiredError).
	ErrGone = errors.New("world: run gone")
	// ErrTooEarly (425): a step was started before its retry time. The error
	// is a *TooEarlyError carrying that time.
	ErrTooEarly = errors.New("world: too early")
	// ErrInvalid (400): the request or event is malformed: unknown event type,
	// missing or invalid payload fields, bad IDs, a foreign cursor.
	ErrInvalid = errors.New("world: invalid request")
	// ErrLeaseHeld: another owner holds the run lease. Acquisition fails fast;
	// the error is a *LeaseHeldError naming the holder.
	ErrLeaseHeld = errors.New("world: lease held by another owner")
	// ErrLeaseLost: a renewal was attempted on a lease the caller no longer holds.
	ErrLeaseLost = errors.New("world: lease not held")
	// ErrClosed: the World has been closed.
	ErrClosed = errors.New("world: closed")
	// ErrKeyUnavailable: a run's payloads cannot be opened because the key
	// that seals them is missing or wrong (an encrypting World's key error
	// matches it). Nothing is wrong with the run: an executor that meets
	// it leaves the run's message for one that holds the key.
	ErrKeyUnavailable = errors.New("world: payload key unavailable")
	// ErrCorrupt (500): bytes read back from storage do not verify: the
	// digest or checksum the World keeps for them does not match, or they do
	// not decode. They were damaged or replaced after they were written; the
	// read returns this error, never the bytes. The error names the run and
	// the part that failed.
	ErrCorrupt = errors.New("world: stored data is corrupt")
	// ErrKeyPending: an Enqueue's idempotency key is claimed by another
	// Enqueue that is not known to have sent its message (it may still be
	// sending, or its sender died between the claim and the send). Nothing
	// was enqueued, and the message is not known to be on the queue: the
	// caller must not count it as delivered (acknowledging its own input on
	// the strength of it would lose the work) and retries later. A World
	// with such claims takes one over once it is old enough (dynamoworld:
	// Config.PendingGrace), so a retry then sends.
	ErrKeyPending = errors.New("world: idempotency key claimed, message not known sent")
)

// Status returns the HTTP-style status code for err: 404, 409, 410, 425, 400,
// 413, or 500 for anything else (and 0 for nil).
func Status(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotFound):
		return 404
	case errors.Is(err, ErrConflict), errors.Is(err, ErrLeaseHeld):
		return 409
	case errors.Is(err, ErrGone):
		return 410
	case errors.Is(err, ErrTooEarly):
		return 425
	case errors.Is(err, ErrInvalid):
		return 400
	case errors.Is(err, ErrLimitExceeded):
		return 413
	default:
		return 500
	}
}

// RefusalError is a typed refusal produced by the state machine: the event was
// not appended because of the current state. It matches its Kind sentinel with
// errors.Is.
type RefusalError struct {
	Kind      error     // one of ErrNotFound, ErrConflict, ErrGone, ErrTooEarly, ErrInvalid
	EventType EventType // the refused event
	Entity    string    // the entity ID concerned (run, step, hook or wait)
	Reason    string    // a human-readable explanation
}

func (e *RefusalError) Error() string {
	if e.Entity == "" { // a run event validated before the run has an ID
		return fmt.Sprintf("%s: %s refused: %s", e.Kind, e.EventType, e.Reason)
	}
	return fmt.Sprintf("%s: %s %s refused: %s", e.Kind, e.EventType, e.Entity, e.Reason)
}

// Unwrap lets errors.Is match the sentinel.
func (e *RefusalError) Unwrap() error { return e.Kind }

// TooEarlyError (425) is returned when a step is started before its retry time.
type TooEarlyError struct {
	StepID     string
	RetryAfter time.Time
}

func (e *TooEarlyError) Error() string {
	return fmt.Sprintf("%s: step %s may not start before %s", ErrTooEarly, e.StepID, e.RetryAfter.UTC().Format(time.RFC3339Nano))
}

// Unwrap lets errors.Is match ErrTooEarly.
func (e *TooEarlyError) Unwrap() error { return ErrTooEarly }

// StepLeasedError (409) is returned when step_started targets a running step
// whose execution lease has not expired: another executor owns the attempt.
type StepLeasedError struct {
	StepID         string
	Attempt        int
	LeaseExpiresAt time.Time
}

func (e *StepLeasedError) Error() string {
	return fmt.Sprintf("%s: step %s attempt %d is running under a lease until %s", ErrConflict, e.StepID, e.Attempt, e.LeaseExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap lets errors.Is match ErrConflict.
func (e *StepLeasedError) Unwrap() error { return ErrConflict }

// RunExistsError (409) is returned when run_created names a run ID that exists,
// or an idempotency key already used by another run. RunID is the existing run.
type RunExistsError struct {
	RunID          string
	IdempotencyKey string
}

func (e *RunExistsError) Error() string {
	if e.IdempotencyKey != "" {
		return fmt.Sprintf("%s: idempotency key %q already started run %s", ErrConflict, e.IdempotencyKey, e.RunID)
	}
	return fmt.Sprintf("%s: run %s already exists", ErrConflict, e.RunID)
}

// Unwrap lets errors.Is match ErrConflict.
func (e *RunExistsError) Unwrap() error { return ErrConflict }

// ExpiredError (410) is returned by a read that needs a part of a run the
// World stores apart from its entities (a claim-checked input, output,
// payload or event data) after the store has expired it: the run is older
// than the World keeps such parts. RunID names the run, What the part.
type ExpiredError struct {
	RunID string
	What  string
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%s: run %s: %s has expired", ErrGone, e.RunID, e.What)
}

// Unwrap lets errors.Is match ErrGone.
func (e *ExpiredError) Unwrap() error { return ErrGone }

// LeaseHeldError is returned when a run lease is held by another owner.
type LeaseHeldError struct {
	RunID     string
	Owner     string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%s: run %s is leased by %s until %s", ErrLeaseHeld, e.RunID, e.Owner, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap lets errors.Is match ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// CommitError wraps the refusal of one event of a multi-event commit: Index is
// the position of the refused event in AppendParams.Events. Nothing of the
// commit was applied.
type CommitError struct {
	Index int
	Err   error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("event %d of commit: %v", e.Index, e.Err)
}

// Unwrap returns the refusal.
func (e *CommitError) Unwrap() error { return e.Err }

// invalidf builds an ErrInvalid refusal.
func invalidf(t EventType, entity, format string, args ...any) error {
	return &RefusalError{Kind: ErrInvalid, EventType: t, Entity: entity, Reason: fmt.Sprintf(format, args...)}
}

func refuse(kind error, t EventType, entity, format string, args ...any) error {
	return &RefusalError{Kind: kind, EventType: t, Entity: entity, Reason: fmt.Sprintf(format, args...)}
}
