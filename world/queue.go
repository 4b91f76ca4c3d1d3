package world

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Queue is the producer side of the World's queue: at-least-once delivery with
// a per-message delay and an idempotency key.
type Queue interface {
	// Enqueue schedules Body for delivery after Delay. When IdempotencyKey is
	// set and a message with the same key was enqueued within the World's
	// dedupe window, nothing is enqueued and the first message's ID is
	// returned with Duplicate set: Duplicate means that message is on the
	// queue (sent), never only claimed. A key claimed by an Enqueue not
	// known to have sent (a World that claims before it sends) is an error
	// matching ErrKeyPending: nothing is enqueued, and the caller retries.
	Enqueue(ctx context.Context, p *EnqueueParams) (*EnqueueResult, error)
}

// Consumer is the receiving side of a World's queue, for running outside
// Lambda (inside Lambda the event source mapping receives).
type Consumer interface {
	// Receive returns up to Max visible messages, waiting up to Wait for the
	// first. Each is hidden from other receivers for Visibility; if it is
	// neither acked nor released by then it is delivered again with Attempt+1.
	// A Receive that ends with an error (ctx cancelled, the World closed)
	// leaves no message hidden: it takes none, or makes visible again what it
	// took. A queue whose service may still hand a message to a receive its
	// client abandoned (SQS's long polls) lets its call end first, so such a
	// Receive may return up to Wait after ctx is cancelled.
	Receive(ctx context.Context, p *ReceiveParams) ([]Delivery, error)
	// Ack deletes a delivered message.
	Ack(ctx context.Context, p *AckParams) error
	// Release makes a delivered message visible again after Delay (a failed
	// attempt: it will be redelivered with Attempt+1).
	Release(ctx context.Context, p *ReleaseParams) error
	// Extend hides a delivered message for Visibility from now, keeping the
	// delivery: the same receipt still acks or releases it, and it is not
	// counted as another attempt. A receiver whose work outlasts the
	// Visibility it asked for calls it periodically (a heartbeat).
	Extend(ctx context.Context, p *ExtendParams) error
}

// EnqueueParams is one message to enqueue.
type EnqueueParams struct {
	Body           []byte
	Delay          time.Duration
	IdempotencyKey string
}

// EnqueueResult reports an enqueue. Duplicate: nothing was enqueued, as
// the message MessageID was sent under the same idempotency key already.
type EnqueueResult struct {
	MessageID string
	Duplicate bool
}

// ReceiveParams bounds a receive.
type ReceiveParams struct {
	Max        int
	Wait       time.Duration
	Visibility time.Duration
}

// Delivery is one received message. MessageID is stable across redeliveries;
// Receipt identifies this delivery for Ack and Release.
type Delivery struct {
	MessageID  string
	Receipt    string
	Body       []byte
	Attempt    int
	EnqueuedAt time.Time
}

// AckParams names a delivery.
type AckParams struct{ Receipt string }

// ReleaseParams names a delivery and when to redeliver it.
type ReleaseParams struct {
	Receipt string
	Delay   time.Duration
}

// ExtendParams names a delivery and how long from now to keep it hidden.
type ExtendParams struct {
	Receipt    string
	Visibility time.Duration
}

// Message is the body every queue carries: a run to continue, and optionally
// steps to execute (background steps: those no invocation runs inline):
// StepID names one, StepIDs several (executed together; a message may set
// both, and its steps are then StepID followed by StepIDs, see Steps).
// NotBefore lets a queue with a capped delay (SQS: 15 minutes) chain hops: a
// consumer that receives a message before NotBefore re-enqueues it for the
// remaining time instead of acting on it.
type Message struct {
	RunID       string    `json:"runId"`
	StepID      string    `json:"stepId,omitempty"`
	StepIDs     []string  `json:"stepIds,omitempty"`
	NotBefore   time.Time `json:"notBefore,omitzero"`
	RequestedAt time.Time `json:"requestedAt,omitzero"`
	// Hop counts the re-enqueues of a chained delay.
	Hop int `json:"hop,omitempty"`
	// HoldAttempt, on a continuation, retries a held run (RunStatusHeld)
	// whose hold has this attempt number: the engine replays it again and,
	// should it still diverge, holds it once more with the next attempt.
	// A message for an earlier attempt is a plain continuation.
	HoldAttempt int `json:"holdAttempt,omitempty"`
	// Refused counts the executors that left this message for another
	// because they do not run its run's code version: each sends it back
	// to the queue as a new message, with Refused one higher, after a delay
	// that grows with it.
	Refused int `json:"refused,omitempty"`
	// Delivered counts the deliveries of the messages this one replaces:
	// an executor that receives a message too often (its executors were
	// lost) sends it again as a new message, whose queue receive count
	// starts afresh, with Delivered carrying the old count on.
	Delivered int `json:"delivered,omitempty"`
}

// EncodeMessage returns the JSON body of m.
func EncodeMessage(m Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// DecodeMessage parses a queue body. A malformed body is an ErrInvalid error:
// retrying it cannot help.
func DecodeMessage(body []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return Message{}, fmt.Errorf("%w: queue message: %v", ErrInvalid, err)
	}
	return m, m.Validate()
}

// Validate checks the IDs of a message.
func (m Message) Validate() error {
	if err := ValidateID(PrefixRun, m.RunID); err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	if m.StepID != "" {
		if err := ValidateID(PrefixStep, m.StepID); err != nil {
			return fmt.Errorf("queue message: %w", err)
		}
	}
	for _, id := range m.StepIDs {
		if err := ValidateID(PrefixStep, id); err != nil {
			return fmt.Errorf("queue message: %w", err)
		}
	}
	if m.HoldAttempt < 0 {
		return fmt.Errorf("%w: queue message: negative holdAttempt", ErrInvalid)
	}
	if m.Refused < 0 {
		return fmt.Errorf("%w: queue message: negative refused", ErrInvalid)
	}
	return nil
}
