package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// Inbox keeps the queued webhook requests too large for a queue message,
// from the QueuedWebhookHandler that accepts them to the Processor that
// commits them (dynamoworld.World keeps them in its bucket, under
// skein/inbox/). What it returns is checked against the digest the queue
// message carries.
type Inbox interface {
	// PutDelivery stores a delivery's request under its ID.
	PutDelivery(ctx context.Context, id string, data []byte) error
	// GetDelivery returns what PutDelivery stored under id, or an error
	// wrapping world.ErrNotFound.
	GetDelivery(ctx context.Context, id string) ([]byte, error)
	// DeleteDelivery removes it; a missing one is not an error.
	DeleteDelivery(ctx context.Context, id string) error
}

// deliveryField is the one top-level field of a webhook delivery message.
const deliveryField = "skeinHookDelivery"

// maxInlineDelivery is the largest delivery message sent with its request
// inline: SQS takes messages of up to 256 KiB, attributes included. A
// larger request goes to the Inbox.
const maxInlineDelivery = 192 << 10

// delivery is a webhook request accepted by QueuedWebhookHandler, on its
// way to the Processor that commits it.
type delivery struct {
	// ID names the delivery: it is committed once, however often its
	// message is delivered.
	ID string `json:"id"`
	// Token is the webhook's: the Processor looks the hook up by it again.
	Token string `json:"token"`
	// Payload is the hook payload (a queuedRequest), or empty when it is in
	// the Inbox under ID, with SHA256 and Size.
	Payload json.RawMessage `json:"payload,omitempty"`
	SHA256  string          `json:"sha256,omitempty"`
	Size    int             `json:"size,omitempty"`
}

// queuedRequest is the payload of a queued delivery: the Request and the
// delivery's ID, which tells a redelivered message's commit from a new one.
type queuedRequest struct {
	Request
	Delivery string `json:"delivery"`
}

// IsWebhookDelivery reports whether a queue body is a webhook delivery
// message (what QueuedWebhookHandler enqueues for Processor.Process to
// commit). Such a body is never a world.Message.
func IsWebhookDelivery(body []byte) bool {
	if !bytes.Contains(body, []byte(`"`+deliveryField+`"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	_, ok := top[deliveryField]
	return ok
}

// QueuedWebhookHandler returns WebhookHandler for a process that only reads
// the World and sends to its queue (a public webhook function): it answers
// as WebhookHandler does (404 for an unknown, disposed or non-webhook token
// or one whose run has ended, the webhook's static response, 202, or the
// response a step sends), but instead of committing a request to the run it
// enqueues it, and a Processor commits it: it looks the hook up by the
// token again, and appends the request once, however often the message is
// delivered. A 202 thus says that the request is queued. A request the
// Processor finds no active hook for (disposed meanwhile, or the run
// ended) is dropped, with a warning in the Processor's log. A request
// whose message would exceed 192 KiB goes to inbox (nil: the message is
// sent as it is), which the Processor must be given too
// (worker.Config.Inbox).
func QueuedWebhookHandler(c *Client, inbox Inbox) http.Handler {
	h := &webhookHandler{c: c, timeout: 30 * time.Second, bodyTimeout: WebhookBodyTimeout}
	h.deliver = func(ctx context.Context, token string, hk *world.Hook, r *Request) error {
		return h.enqueue(ctx, inbox, token, hk, r)
	}
	return h
}

// enqueue sends the delivery of r to hk as a queue message.
func (h *webhookHandler) enqueue(ctx context.Context, inbox Inbox, token string, hk *world.Hook, r *Request) error {
	run, err := h.c.w.GetRun(ctx, &world.GetRunParams{RunID: hk.RunID})
	if err != nil {
		return err
	}
	if run.Status.Terminal() {
		return fmt.Errorf("%w: the webhook's run has ended", world.ErrNotFound)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	d := delivery{ID: "wd_" + hex.EncodeToString(b[:]), Token: token}
	if d.Payload, err = json.Marshal(queuedRequest{Request: *r, Delivery: d.ID}); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]delivery{deliveryField: d})
	if err != nil {
		return err
	}
	if len(body) > maxInlineDelivery && inbox != nil {
		sum := sha256.Sum256(d.Payload)
		if err := inbox.PutDelivery(ctx, d.ID, d.Payload); err != nil {
			return err
		}
		d.SHA256, d.Size, d.Payload = hex.EncodeToString(sum[:]), len(d.Payload), nil
		if body, err = json.Marshal(map[string]delivery{deliveryField: d}); err != nil {
			return err
		}
	}
	_, err = h.c.w.Enqueue(ctx, &world.EnqueueParams{Body: body})
	return err
}

// decodeDelivery parses a delivery message strictly.
func decodeDelivery(body []byte) (delivery, error) {
	var m map[string]delivery
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return delivery{}, err
	}
	d, ok := m[deliveryField]
	switch {
	case !ok || len(m) != 1:
		return delivery{}, errors.New("not a delivery message")
	case d.ID == "" || d.Token == "":
		return delivery{}, errors.New("a delivery needs an id and a token")
	case len(d.Payload) == 0 && (d.SHA256 == "" || d.Size <= 0):
		return delivery{}, errors.New("a delivery needs a payload, or the digest and size of its inbox object")
	}
	return d, nil
}

// processDelivery commits a webhook delivery message (IsWebhookDelivery).
func (p *Processor) processDelivery(ctx context.Context, body []byte) error {
	d, err := decodeDelivery(body)
	if err != nil {
		// The body holds the token: keep it out of the error.
		return &engine.PermanentError{Reason: "malformed webhook delivery", Err: errors.New(redactTokenIn(err.Error(), d.Token))}
	}
	log := p.log.With("delivery", d.ID, "token", engine.RedactToken(d.Token))
	payload := func() (json.RawMessage, error) {
		if len(d.Payload) > 0 {
			return checkDelivery(d, d.Payload)
		}
		if p.inbox == nil {
			return nil, &engine.PermanentError{Reason: engine.DeliveryDropped, Err: errors.New("its request is in an inbox, and worker.Config.Inbox is not set")}
		}
		b, err := p.inbox.GetDelivery(ctx, d.ID)
		if errors.Is(err, world.ErrNotFound) {
			return nil, &engine.PermanentError{Reason: engine.DeliveryDropped, Err: errors.New("its inbox object is missing")}
		}
		if err != nil {
			return nil, err
		}
		return checkDelivery(d, b)
	}
	h, dup, err := engine.DeliverHook(ctx, p.client.w, p.client.now, d.Token, d.ID, payload)
	var pe *engine.PermanentError
	switch {
	case errors.As(err, &pe):
		// Errors name no token, only its digest.
		err = &engine.PermanentError{Reason: "webhook delivery dropped", Err: errors.New(redactTokenIn(err.Error(), d.Token))}
		log.Warn("workflow: webhook delivery dropped", "reason", err.Error())
	case err != nil:
		return errors.New(redactTokenIn(err.Error(), d.Token))
	case dup:
		log.Info("workflow: webhook delivery already committed", "run", h.RunID, "hook", h.HookID)
	default:
		log.Info("workflow: webhook delivery committed", "run", h.RunID, "hook", h.HookID)
	}
	if len(d.Payload) == 0 && p.inbox != nil {
		if derr := p.inbox.DeleteDelivery(ctx, d.ID); derr != nil {
			log.Warn("workflow: webhook delivery: inbox object not deleted", "err", derr.Error())
		}
	}
	return err
}

// checkDelivery verifies a delivery's request: the digest and size its
// message promises, and the delivery ID it must carry.
func checkDelivery(d delivery, b []byte) (json.RawMessage, error) {
	if d.SHA256 != "" {
		sum := sha256.Sum256(b)
		if len(b) != d.Size || hex.EncodeToString(sum[:]) != d.SHA256 {
			return nil, &engine.PermanentError{Reason: engine.DeliveryDropped, Err: errors.New("its inbox object does not match the digest of its message")}
		}
	}
	var q queuedRequest
	if err := json.Unmarshal(b, &q); err != nil || q.Delivery != d.ID {
		return nil, &engine.PermanentError{Reason: engine.DeliveryDropped, Err: errors.New("its request is not a webhook request of this delivery")}
	}
	return b, nil
}
