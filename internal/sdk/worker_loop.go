package sdk

// The Worker's consumers: receiving, handling one delivery, and keeping it
// hidden while it is handled.

import (
	"context"
	"errors"
	"time"

	"github.com/skeinflow/skein/internal/renew"
	"github.com/skeinflow/skein/world"
)

func (w *Worker) loop(ctx context.Context) {
	errDelay := 10 * time.Millisecond
	for ctx.Err() == nil {
		ds, err := w.consumer.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: w.pollWait, Visibility: w.cfg.Visibility})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, world.ErrClosed) {
				return
			}
			w.cfg.Logger.Warn("workflow: receive", "err", err)
			t := time.NewTimer(errDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 10 * time.Millisecond
		for _, d := range ds {
			if ctx.Err() != nil {
				w.giveBack(ctx, d) // a receive that ended as Run stops
				continue
			}
			w.handle(ctx, d)
		}
	}
}

func (w *Worker) handle(ctx context.Context, d world.Delivery) {
	w.inflight.Add(1)
	defer w.inflight.Add(-1)
	stop := w.heartbeat(ctx, d)
	err := w.p.Process(ctx, d.Body, d.Attempt)
	stop()
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch {
	case err == nil:
		err = w.consumer.Ack(bg, &world.AckParams{Receipt: d.Receipt})
	case IsPermanent(err):
		w.cfg.Logger.Warn("workflow: dropping message", "message", d.MessageID, "err", err)
		err = w.consumer.Ack(bg, &world.AckParams{Receipt: d.Receipt})
	case ctx.Err() != nil:
		err = w.consumer.Release(bg, &world.ReleaseParams{Receipt: d.Receipt})
	default:
		attempt := d.Attempt + delivered(d.Body)
		w.cfg.Logger.Warn("workflow: message failed; retrying", "message", d.MessageID, "attempt", attempt, "err", err)
		err = w.consumer.Release(bg, &world.ReleaseParams{Receipt: d.Receipt, Delay: w.retryDelay(attempt)})
	}
	if err != nil && !errors.Is(err, world.ErrClosed) {
		w.cfg.Logger.Warn("workflow: ack/release", "message", d.MessageID, "err", err)
	}
}

// giveBack hands back a delivery received once Run's context has ended,
// without working on it and without counting it: a copy of its message is
// sent carrying the deliveries before this one (world.Message.Delivered),
// then the delivery is acknowledged, so this receive counts neither
// against the run's EngineOptions.MaxDeliveries nor towards a queue's
// dead-letter count. A body that is not a message, or a copy that cannot
// be sent, is released at once instead (visible again, its receive
// counted). The copy goes out before the acknowledgement: a process that
// dies in between leaves a duplicate, which the run lease makes harmless,
// never a lost message.
func (w *Worker) giveBack(ctx context.Context, d world.Delivery) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if m, err := world.DecodeMessage(d.Body); err == nil {
		m.Delivered = max(m.Delivered, 0) + max(d.Attempt-1, 0)
		body, err := world.EncodeMessage(m)
		if err == nil {
			_, err = w.cfg.World.Enqueue(bg, &world.EnqueueParams{Body: body})
		}
		if err == nil {
			if err := w.consumer.Ack(bg, &world.AckParams{Receipt: d.Receipt}); err != nil && !errors.Is(err, world.ErrClosed) {
				w.cfg.Logger.Warn("workflow: acknowledge a message given back at stop", "message", d.MessageID, "err", err)
			}
			return
		}
		w.cfg.Logger.Warn("workflow: send back a message received at stop; releasing it", "message", d.MessageID, "err", err)
	}
	if err := w.consumer.Release(bg, &world.ReleaseParams{Receipt: d.Receipt}); err != nil && !errors.Is(err, world.ErrClosed) {
		w.cfg.Logger.Warn("workflow: release a message received at stop", "message", d.MessageID, "err", err)
	}
}

// delivered is how often the messages a message body replaces were
// delivered (world.Message.Delivered; 0 for other bodies): a failed
// message's retry delay counts them, so that replacing a message keeps its
// backoff.
func delivered(body []byte) int {
	if m, err := world.DecodeMessage(body); err == nil {
		return max(m.Delivered, 0)
	}
	return 0
}

// heartbeat keeps a delivery hidden while it is handled, however long that
// takes (a long step, a long session): every third of Visibility it extends
// the delivery by Visibility, so the message is not delivered again to
// another of the Worker's goroutines meanwhile. Should this process die,
// the heartbeat stops with it and the message comes back within one
// Visibility (at once when a durable localworld is reopened).
func (w *Worker) heartbeat(ctx context.Context, d world.Delivery) (stop func()) {
	return renew.Every(ctx, w.cfg.Visibility/3, func() bool {
		err := w.consumer.Extend(ctx, &world.ExtendParams{Receipt: d.Receipt, Visibility: w.cfg.Visibility})
		if err != nil && ctx.Err() == nil && !errors.Is(err, world.ErrClosed) {
			w.cfg.Logger.Warn("workflow: extend the visibility of a message being handled", "message", d.MessageID, "err", err)
		}
		return true
	})
}
