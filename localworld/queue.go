package localworld

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// The queue lives in the store: a message record per ID, and a visibility
// index keyed by (visibleAt, ID) that holds every message, delayed, visible
// or in flight. A message is visible when its key's time is not after now;
// receiving it moves its key to now+visibility. Waiting receivers sleep on a
// channel closed at every enqueue and release, and on a timer set for the
// earliest key in the future.

// queueMsg is a message as stored.
type queueMsg struct {
	ID             string    `json:"id"`
	Body           []byte    `json:"body,omitempty"`
	Attempt        int       `json:"attempt"`
	EnqueuedAt     time.Time `json:"enqueuedAt"`
	VisibleAt      time.Time `json:"visibleAt"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	// Received marks a message hidden by a delivery (not by a delay): one
	// the receiver still holds, until it acks or releases it.
	Received bool `json:"received,omitempty"`
}

// queueIdem is an idempotency key as stored.
type queueIdem struct {
	MessageID string    `json:"messageId"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// idemSweep bounds how many expired idempotency keys one enqueue deletes.
const idemSweep = 64

func msgKey(id string) []byte { return newKey().raw(id) }

func visKey(m *queueMsg) []byte { return newKey().time(m.VisibleAt).raw(m.ID) }

func idemKey(k string) []byte { return newKey().raw(k) }

func idemExpiryKey(k string, exp time.Time) []byte { return newKey().time(exp).raw(k) }

// Enqueue stores a message, visible after p.Delay. With an idempotency key
// seen within the dedupe window it stores nothing and returns the first
// message's ID with Duplicate set.
func (w *store) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	switch {
	case p == nil:
		return nil, invalid("nil EnqueueParams")
	case p.Delay < 0:
		return nil, invalid("negative delay %s", p.Delay)
	}
	var res *world.EnqueueResult
	err := w.update(ctx, func(tx kvTx) error {
		now := w.now()
		if err := sweepIdem(tx, now); err != nil {
			return err
		}
		if p.IdempotencyKey != "" {
			rec, err := getIdem(tx, p.IdempotencyKey)
			if err != nil {
				return err
			}
			if rec != nil && rec.ExpiresAt.After(now) {
				res = &world.EnqueueResult{MessageID: rec.MessageID, Duplicate: true}
				return nil
			}
			if rec != nil {
				if err := tx.del(bQueueIdemExpiry, idemExpiryKey(p.IdempotencyKey, rec.ExpiresAt)); err != nil {
					return err
				}
			}
		}
		m := &queueMsg{
			ID: w.ids.New(world.PrefixMsg), Body: bytes.Clone(p.Body), EnqueuedAt: now,
			VisibleAt: now.Add(p.Delay), IdempotencyKey: p.IdempotencyKey,
		}
		if err := putMsg(tx, m, nil); err != nil {
			return err
		}
		if p.IdempotencyKey != "" {
			rec := queueIdem{MessageID: m.ID, ExpiresAt: now.Add(w.cfg.DedupeWindow)}
			b, err := encode(rec)
			if err != nil {
				return err
			}
			if err := tx.put(bQueueIdem, idemKey(p.IdempotencyKey), b); err != nil {
				return err
			}
			if err := tx.put(bQueueIdemExpiry, idemExpiryKey(p.IdempotencyKey, rec.ExpiresAt), nil); err != nil {
				return err
			}
		}
		res = &world.EnqueueResult{MessageID: m.ID}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !res.Duplicate {
		w.signalQueue()
	}
	return res, nil
}

func getIdem(tx kvTx, k string) (*queueIdem, error) {
	return getJSON[queueIdem](tx, bQueueIdem, idemKey(k))
}

// sweepIdem deletes up to idemSweep idempotency keys that expired.
func sweepIdem(tx kvTx, now time.Time) error {
	var expired [][]byte
	err := tx.scan(bQueueIdemExpiry, nil, newKey().time(now), false, func(k, _ []byte) bool {
		expired = append(expired, bytes.Clone(k))
		return len(expired) < idemSweep
	})
	if err != nil {
		return err
	}
	for _, k := range expired {
		if err := tx.del(bQueueIdemExpiry, k); err != nil {
			return err
		}
		name := string(k[8:])
		rec, err := getIdem(tx, name)
		if err != nil {
			return err
		}
		if rec != nil && !rec.ExpiresAt.After(now) {
			if err := tx.del(bQueueIdem, idemKey(name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func getMsg(tx kvTx, id string) (*queueMsg, error) {
	return getJSON[queueMsg](tx, bQueueMsgs, msgKey(id))
}

// putMsg stores m and moves its visibility key from oldVis (nil for a new
// message).
func putMsg(tx kvTx, m *queueMsg, oldVis []byte) error {
	b, err := encode(m)
	if err != nil {
		return err
	}
	if err := tx.put(bQueueMsgs, msgKey(m.ID), b); err != nil {
		return err
	}
	if oldVis != nil {
		if err := tx.del(bQueueVisible, oldVis); err != nil {
			return err
		}
	}
	return tx.put(bQueueVisible, visKey(m), nil)
}

// receiveVisibility checks p's bounds and returns the visibility its
// messages get: p.Visibility, or world.DefaultVisibility when it names none.
func receiveVisibility(p *world.ReceiveParams) (time.Duration, error) {
	switch {
	case p.Max < 0 || p.Wait < 0 || p.Visibility < 0:
		return 0, invalid("negative receive parameter")
	case p.Visibility == 0:
		return world.DefaultVisibility, nil
	}
	return p.Visibility, nil
}

// Receive returns up to p.Max (default 1, at most MaxReceive) visible
// messages, each hidden for p.Visibility (default world.DefaultVisibility)
// and counted as one more attempt. With nothing visible it waits up to p.Wait
// for an enqueue, a release or a delay to elapse; it returns an empty slice
// when the wait ends, and world.ErrClosed if the World closes meanwhile.
func (w *store) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	if p == nil {
		p = &world.ReceiveParams{}
	}
	vis, err := receiveVisibility(p)
	if err != nil {
		return nil, err
	}
	n := min(max(p.Max, 1), MaxReceive)
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		changed := w.queueChanged()
		got, next, err := w.receiveOnce(ctx, n, vis)
		if err != nil || len(got) > 0 {
			return got, err
		}
		if deadline == nil {
			return []world.Delivery{}, nil
		}
		var wake <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(max(next.Sub(w.now()), time.Millisecond))
			wake = timer.C
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-w.closedCh:
			err = world.ErrClosed
		case <-deadline:
			got = []world.Delivery{}
		case <-changed:
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if err != nil || got != nil {
			return got, err
		}
	}
}

// NextVisible reports when the queue's earliest message becomes visible
// (a time not after now means one is visible already; zero means the queue
// is empty), together with a channel closed at the next enqueue or release,
// taken before the read so that a change after it is never missed. Messages
// received and not yet acknowledged count, at the end of their visibility.
// It lets a driver of a virtual clock (package skeintest) tell what the
// queue waits for and skip the time to it, where Receive would wait on a
// real timer.
func (w *World) NextVisible(ctx context.Context) (next time.Time, changed <-chan struct{}, err error) {
	return w.s.nextVisible(ctx)
}

// nextVisible is World.NextVisible.
func (w *store) nextVisible(ctx context.Context) (next time.Time, changed <-chan struct{}, err error) {
	changed = w.queueChanged()
	err = w.view(ctx, func(tx kvTx) error {
		return tx.scan(bQueueVisible, nil, nil, false, func(k, _ []byte) bool {
			if ts, _, ok := readU64(k); ok {
				next = bitsTime(ts)
			}
			return false
		})
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	return next, changed, nil
}

// receiveOnce delivers the visible messages, or reports the time the next
// one becomes visible (zero when the queue is empty). A read transaction
// looks first, so that an idle poll writes nothing.
func (w *store) receiveOnce(ctx context.Context, n int, vis time.Duration) ([]world.Delivery, time.Time, error) {
	for {
		var next time.Time
		err := w.view(ctx, func(tx kvTx) error {
			return tx.scan(bQueueVisible, nil, nil, false, func(k, _ []byte) bool {
				if ts, _, ok := readU64(k); ok {
					next = bitsTime(ts)
				}
				return false
			})
		})
		if err != nil || next.IsZero() || next.After(w.now()) {
			return nil, next, err
		}
		var out []world.Delivery
		err = w.update(ctx, func(tx kvTx) error {
			out = nil
			return w.deliver(tx, n, vis, &out)
		})
		// Nothing delivered means another receiver was faster: look again.
		if err != nil || len(out) > 0 {
			return out, time.Time{}, err
		}
	}
}

// deliver hides up to n visible messages for vis and appends them to out.
func (w *store) deliver(tx kvTx, n int, vis time.Duration, out *[]world.Delivery) error {
	now := w.now()
	var keys [][]byte
	err := tx.scan(bQueueVisible, nil, newKey().time(now.Add(time.Nanosecond)), false, func(k, _ []byte) bool {
		keys = append(keys, bytes.Clone(k))
		return len(keys) < n
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		m, err := getMsg(tx, string(k[8:]))
		if err != nil {
			return err
		}
		if m == nil { // an index entry without its message: drop it
			w.logger.Warn("localworld: dropping a queue index entry without its message", slog.String("message", string(k[8:])))
			if err := tx.del(bQueueVisible, k); err != nil {
				return err
			}
			continue
		}
		m.Attempt++
		m.VisibleAt = now.Add(vis)
		m.Received = true
		if err := putMsg(tx, m, k); err != nil {
			return err
		}
		*out = append(*out, world.Delivery{
			MessageID: m.ID, Receipt: receipt(m), Body: m.Body,
			Attempt: m.Attempt, EnqueuedAt: m.EnqueuedAt,
		})
	}
	return nil
}

// A receipt names one delivery: the message and its attempt. A receipt of an
// earlier delivery no longer acks or releases the message.
func receipt(m *queueMsg) string { return m.ID + "." + strconv.Itoa(m.Attempt) }

func parseReceipt(r string) (id string, attempt int, err error) {
	i := strings.LastIndexByte(r, '.')
	if i <= 0 {
		return "", 0, invalid("malformed receipt %q", r)
	}
	attempt, err = strconv.Atoi(r[i+1:])
	if err != nil || attempt < 1 {
		return "", 0, invalid("malformed receipt %q", r)
	}
	return r[:i], attempt, nil
}

// delivered loads the message a receipt names, checking that the receipt is
// its latest delivery.
func delivered(tx kvTx, r string) (*queueMsg, error) {
	id, attempt, err := parseReceipt(r)
	if err != nil {
		return nil, err
	}
	m, err := getMsg(tx, id)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%w: message %s (already acknowledged?)", world.ErrNotFound, id)
	}
	if m.Attempt != attempt {
		return nil, fmt.Errorf("%w: receipt of delivery %d of message %s, which is at delivery %d", world.ErrConflict, attempt, id, m.Attempt)
	}
	return m, nil
}

// Ack deletes a delivered message. The receipt must be the message's latest
// delivery (world.ErrConflict otherwise); an unknown or already acknowledged
// message is world.ErrNotFound.
func (w *store) Ack(ctx context.Context, p *world.AckParams) error {
	if p == nil {
		return invalid("nil AckParams")
	}
	return w.update(ctx, func(tx kvTx) error {
		m, err := delivered(tx, p.Receipt)
		if err != nil {
			return err
		}
		if err := tx.del(bQueueMsgs, msgKey(m.ID)); err != nil {
			return err
		}
		return tx.del(bQueueVisible, visKey(m))
	})
}

// Release makes a delivered message visible again after p.Delay; its next
// delivery counts one more attempt.
func (w *store) Release(ctx context.Context, p *world.ReleaseParams) error {
	switch {
	case p == nil:
		return invalid("nil ReleaseParams")
	case p.Delay < 0:
		return invalid("negative delay %s", p.Delay)
	}
	err := w.update(ctx, func(tx kvTx) error {
		m, err := delivered(tx, p.Receipt)
		if err != nil {
			return err
		}
		old := visKey(m)
		m.VisibleAt = w.now().Add(p.Delay)
		m.Received = false
		return putMsg(tx, m, old)
	})
	if err == nil {
		w.signalQueue()
	}
	return err
}

// Extend hides a delivered message for p.Visibility from now; the delivery
// (its receipt and attempt) stays the same.
func (w *store) Extend(ctx context.Context, p *world.ExtendParams) error {
	switch {
	case p == nil:
		return invalid("nil ExtendParams")
	case p.Visibility < 0:
		return invalid("negative visibility %s", p.Visibility)
	}
	return w.update(ctx, func(tx kvTx) error {
		m, err := delivered(tx, p.Receipt)
		if err != nil {
			return err
		}
		old := visKey(m)
		m.VisibleAt = w.now().Add(p.Visibility)
		return putMsg(tx, m, old)
	})
}

// releaseAbandoned runs when a durable World opens, beside
// expireStaleLeases and for the same reason: the store's lock proves that
// the process that held it before is gone, so the messages it had received
// and not yet acknowledged will never be; waiting out their visibility
// timeout (5 minutes for a worker.Worker) would only delay the restart's
// recovery. It makes them visible now, each delivery still counted, in one
// transaction, and logs how many. Messages hidden by a delay stay hidden.
func (w *store) releaseAbandoned() error {
	var held []*queueMsg
	find := func(tx kvTx) error {
		held = nil
		now := w.now()
		var scanErr error
		err := tx.scan(bQueueMsgs, nil, nil, false, func(k, v []byte) bool {
			var m queueMsg
			if scanErr = decode(bQueueMsgs, k, v, &m); scanErr != nil {
				return false
			}
			if m.Received && m.VisibleAt.After(now) {
				held = append(held, &m)
			}
			return true
		})
		if err == nil {
			err = scanErr
		}
		return err
	}
	if err := w.kv.view(find); err != nil || len(held) == 0 {
		return err
	}
	err := w.kv.update(func(tx kvTx) error {
		if err := find(tx); err != nil {
			return err
		}
		now := w.now()
		for _, m := range held {
			old := visKey(m)
			m.VisibleAt, m.Received = now, false
			if err := putMsg(tx, m, old); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.logger.LogAttrs(context.Background(), slog.LevelInfo, "localworld: released the messages the previous process held",
		slog.String("path", w.cfg.Path), slog.Int("messages", len(held)))
	return nil
}
