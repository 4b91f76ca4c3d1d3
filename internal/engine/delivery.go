package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// maxDeliveryFences bounds the commits a delivery tries when the run moves
// on between its read and its write (another event appended meanwhile):
// past it the delivery fails and its message is retried later.
const maxDeliveryFences = 16

// DeliveryDropped is the reason of the PermanentError DeliverHook returns
// for a delivery that can never be committed (its hook is unknown or
// disposed, its run has ended): the message is acknowledged and the
// payload dropped.
const DeliveryDropped = "delivery dropped"

// DeliverHook commits one queued delivery to the active hook holding token,
// once however often it is called with the same deliveryID: payload(),
// called only when the delivery is not yet in the run's log, returns the
// hook payload, which must carry deliveryID in its top-level "delivery"
// field (that is how a later call recognises it). The commit is fenced on
// the run's last sequence number, so that two concurrent calls cannot both
// append it. A delivery whose hook is unknown or disposed, whose run has
// ended, or that the run's limits refuse, is a PermanentError with Reason
// DeliveryDropped. The run is woken
// after the commit, and again when the delivery was already committed (the
// first call may have died before its wake-up); dup reports that case.
func DeliverHook(ctx context.Context, w world.World, now func() time.Time, token, deliveryID string, payload func() (json.RawMessage, error)) (h *world.Hook, dup bool, err error) {
	for range maxDeliveryFences {
		h, err = w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: token})
		if errors.Is(err, world.ErrNotFound) || errors.Is(err, world.ErrInvalid) {
			return nil, false, &PermanentError{Reason: DeliveryDropped, Err: errors.New("no active hook holds the token")}
		}
		if err != nil {
			return nil, false, err
		}
		run, err := w.GetRun(ctx, &world.GetRunParams{RunID: h.RunID})
		if err != nil {
			return nil, false, err
		}
		if run.Status.Terminal() {
			return nil, false, &PermanentError{Reason: DeliveryDropped, Err: fmt.Errorf("run %s has ended (%s)", h.RunID, run.Status)}
		}
		// The run's last sequence number is read before its hook's events:
		// a commit of this delivery that the scan misses came after it, and
		// the fenced append below is refused.
		if ev, err := findDelivery(ctx, w, h, deliveryID); err != nil {
			return nil, false, err
		} else if ev != nil {
			return h, true, Wake(ctx, w, now, h.RunID, keyHook(ev.EventID))
		}
		p, err := payload()
		if err != nil {
			return nil, false, err
		}
		res, err := w.Append(ctx, &world.AppendParams{RunID: h.RunID, IfLastSeq: run.LastSeq, Events: []world.EventInput{
			{CorrelationID: h.HookID, Data: &world.HookReceived{Token: token, Payload: p}},
		}})
		switch {
		case err == nil:
			return h, false, Wake(ctx, w, now, h.RunID, keyHook(res.Results[0].Event.EventID))
		case errors.Is(err, world.ErrCorrupt):
			return nil, false, err // the token's index is damaged: keep the payload (retried, then dead-lettered)
		case refusedEvent(err) != nil || errors.Is(err, world.ErrLimitExceeded) || errors.Is(err, world.ErrNotFound) || errors.Is(err, world.ErrGone):
			// The hook was disposed, or the run ended, since the reads.
			return nil, false, &PermanentError{Reason: DeliveryDropped, Err: err}
		case errors.Is(err, world.ErrConflict):
			continue // the run moved on: read again
		default:
			return nil, false, err
		}
	}
	return nil, false, fmt.Errorf("engine: delivery: the run kept moving on (%d fenced commits refused)", maxDeliveryFences)
}

// findDelivery returns the hook_received event of h that carries deliveryID,
// or nil.
func findDelivery(ctx context.Context, w world.World, h *world.Hook, deliveryID string) (*world.Event, error) {
	cursor := ""
	for {
		page, err := w.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{
			RunID: h.RunID, CorrelationID: h.HookID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit},
		})
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			ev := &page.Items[i]
			hr, ok := ev.Data.(*world.HookReceived)
			if !ok {
				continue
			}
			var d struct {
				Delivery string `json:"delivery"`
			}
			if json.Unmarshal(hr.Payload, &d) == nil && d.Delivery == deliveryID {
				return ev, nil
			}
		}
		if !page.HasMore {
			return nil, nil
		}
		cursor = page.Cursor
	}
}
