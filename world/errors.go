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
	// the read needs a part of a run that has expired (a *RefusalError
	// naming the run and the part).
	ErrGone = errors.New("world: run gone")
	// ErrTooEarly (425): a step was started before its retry time. The error
	// is a *RefusalError carrying that time (Until).
	ErrTooEarly = errors.New("world: too early")
	// ErrInvalid (400): the request or event is malformed: unknown event type,
	// missing or invalid payload fields, bad IDs, a foreign cursor.
	ErrInvalid = errors.New("world: invalid request")
	// ErrLeaseHeld: another owner holds the run lease. Acquisition fails fast;
	// the error is a *RefusalError naming the holder (Holder, Until).
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
	// 30s), so a retry then sends.
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

// RefusalError is a typed refusal: a write the current state does not
// allow, or a read of a part of a run that has expired. It matches its
// Kind sentinel with errors.Is; the fields beyond Reason tell the cases
// apart, each set only in its case:
//
//   - an event of an Append refused: EventType, Entity, and Index, the
//     event's position in AppendParams.Events (nothing of the commit was
//     applied);
//   - a step (or compensation) started before its retry time: Kind
//     ErrTooEarly, Until the retry time;
//   - a step (or compensation) started while an attempt runs under a live
//     lease: Kind ErrConflict, Attempt that attempt (at least 1), Until the
//     lease's end;
//   - run_created on a run ID that exists, or with an idempotency key
//     another run took: Kind ErrConflict, Entity the existing run, Key the
//     idempotency key (empty for a taken run ID);
//   - AcquireRunLease of a lease another owner holds: Kind ErrLeaseHeld,
//     Entity the run, Holder the owner, Until the lease's end (no
//     EventType);
//   - a read of a claim-checked part of a run the store has expired: Kind
//     ErrGone, Entity the run, Reason what expired (no EventType).
type RefusalError struct {
	Kind      error     // one of ErrNotFound, ErrConflict, ErrGone, ErrTooEarly, ErrInvalid, ErrLeaseHeld
	EventType EventType // the refused event; empty for a refusal that is not of an event
	Entity    string    // the entity ID concerned (run, step, hook or wait)
	Reason    string    // a human-readable explanation
	// Index is the position of the refused event in AppendParams.Events.
	Index int
	// Until is when the refusal may lift: the retry time (ErrTooEarly),
	// the end of the step's or the run's lease.
	Until time.Time
	// Attempt is the attempt running under the step's lease.
	Attempt int
	// Holder is the owner of the run lease.
	Holder string
	// Key is the idempotency key the existing run (Entity) took.
	Key string
}

func (e *RefusalError) Error() string {
	var msg string
	switch {
	case e.EventType == "" && e.Entity == "": // an event without data
		msg = fmt.Sprintf("%s: %s", e.Kind, e.Reason)
	case e.EventType == "": // not an event's refusal: a run lease, an expired read
		msg = fmt.Sprintf("%s: run %s: %s", e.Kind, e.Entity, e.Reason)
	case e.Entity == "": // a run event validated before the run has an ID
		msg = fmt.Sprintf("%s: %s refused: %s", e.Kind, e.EventType, e.Reason)
	default:
		msg = fmt.Sprintf("%s: %s %s refused: %s", e.Kind, e.EventType, e.Entity, e.Reason)
	}
	if e.Index > 0 {
		msg += fmt.Sprintf(" (event %d of the commit)", e.Index)
	}
	return msg
}

// Unwrap lets errors.Is match the sentinel.
func (e *RefusalError) Unwrap() error { return e.Kind }

// tooEarly refuses t of step corr before its retry time.
func tooEarly(t EventType, corr string, until time.Time) error {
	return &RefusalError{Kind: ErrTooEarly, EventType: t, Entity: corr, Until: until,
		Reason: "may not start before " + until.UTC().Format(time.RFC3339Nano)}
}

// stepLeased refuses t of step corr while attempt runs under a lease
// until until.
func stepLeased(t EventType, corr string, attempt int, until time.Time) error {
	return &RefusalError{Kind: ErrConflict, EventType: t, Entity: corr, Attempt: attempt, Until: until,
		Reason: fmt.Sprintf("attempt %d is running under a lease until %s", attempt, until.UTC().Format(time.RFC3339Nano))}
}

// invalidf builds an ErrInvalid refusal.
func invalidf(t EventType, entity, format string, args ...any) error {
	return &RefusalError{Kind: ErrInvalid, EventType: t, Entity: entity, Reason: fmt.Sprintf(format, args...)}
}

func refuse(kind error, t EventType, entity, format string, args ...any) error {
	return &RefusalError{Kind: kind, EventType: t, Entity: entity, Reason: fmt.Sprintf(format, args...)}
}
