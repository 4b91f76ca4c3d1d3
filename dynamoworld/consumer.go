package dynamoworld

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/world"
)

// SQS bounds.
const (
	maxReceiveBatch = 10
	maxLongPoll     = 20 * time.Second
	maxVisibility   = 12 * time.Hour
)

// receiveVisibility checks p's bounds and returns the visibility its
// messages get: p.Visibility, or world.DefaultVisibility when it names none.
func receiveVisibility(p *world.ReceiveParams) (time.Duration, error) {
	switch {
	case p == nil:
		return 0, invalid("nil ReceiveParams")
	case p.Max < 0 || p.Wait < 0 || p.Visibility < 0:
		return 0, invalid("negative receive parameter")
	case p.Visibility > maxVisibility:
		return 0, invalid("visibility %s is over SQS's 12h", p.Visibility)
	case p.Visibility == 0:
		return world.DefaultVisibility, nil
	}
	return p.Visibility, nil
}

// Receive long-polls the queue for up to p.Max messages (at most 10 a call),
// waiting up to p.Wait (in calls of at most 20s) for the first, and hides
// them for p.Visibility. Times are rounded up to whole seconds, as SQS
// counts them. Attempt is SQS's ApproximateReceiveCount.
//
// Cancelling ctx (or closing the World) does not cut the SQS call in
// flight short, since SQS goes on with a long poll whose client has gone
// and hands it the next message sent, which then stays hidden for the
// whole visibility, received by no one. Receive lets the call end (within
// its wait; only 5s past it is the call cut), makes visible again at once
// whatever the call brought, and returns ctx's error (world.ErrClosed once
// the World is closing). So a stopped Receive returns within its wait
// (p.Wait, at most 20s), and a call is never longer than what is left of
// ctx's deadline (rounded up to a second).
//
// A message whose body is a world.Message with NotBefore in the future (a
// delay longer than SQS's 15 minutes) is not returned: Receive re-enqueues it
// for the time left (at most 15 minutes more; Hop+1) and deletes it, unless
// its run has finished or does not exist: then it only deletes it (one
// Query of the run per hop).
func (w *store) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	vis, err := receiveVisibility(p)
	if err != nil {
		return nil, err
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	n := min(max(p.Max, 1), maxReceiveBatch)
	deadline := time.Now().Add(p.Wait)
	for {
		wait := min(time.Until(deadline), maxLongPoll)
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if err := w.receiveStopped(ctx); err != nil {
			return nil, err
		}
		out, err := w.receiveMessage(ctx, n, wait, vis)
		if err != nil {
			if err := w.receiveStopped(ctx); err != nil {
				return nil, err
			}
			return nil, sqsErr("ReceiveMessage", w.cfg.QueueURL, err)
		}
		if err := w.receiveStopped(ctx); err != nil {
			w.giveBack(out.Messages)
			return nil, err
		}
		var ds []world.Delivery
		for _, m := range out.Messages {
			d, err := decodeDelivery(m)
			if err != nil {
				return nil, err
			}
			if hopped, err := w.hop(ctx, d, m); err != nil {
				w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: chained hop failed; the message will come back", slog.String("message", d.MessageID), slog.Any("err", err))
				continue
			} else if hopped {
				continue
			}
			ds = append(ds, d)
		}
		if len(ds) > 0 || !time.Now().Before(deadline) {
			return ds, nil
		}
	}
}

// receiveGrace is how long a ReceiveMessage call whose receiver has gone
// (ctx cancelled, World closed) may outlast its long poll before it is cut
// short.
const receiveGrace = 5 * time.Second

// receiveStopped returns why a receive must stop: world.ErrClosed once the
// World is closing, ctx's error once it is done, else nil.
func (w *store) receiveStopped(ctx context.Context) error {
	if w.closed.Load() {
		return world.ErrClosed
	}
	return ctx.Err()
}

// receiveMessage makes one ReceiveMessage call, waiting up to wait. The call
// is detached from ctx and from Close (see Receive): only when it runs
// receiveGrace past its wait after either ended is it cancelled.
func (w *store) receiveMessage(ctx context.Context, n int, wait, vis time.Duration) (*sqs.ReceiveMessageOutput, error) {
	wait = max(wait, 0)
	end := time.Now().Add(time.Duration(ceilSeconds(wait))*time.Second + receiveGrace)
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case <-ctx.Done():
		case <-w.closeCtx.Done():
		case <-returned:
			return
		}
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-returned:
		}
	}()
	return w.sqs.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(w.cfg.QueueURL),
		MaxNumberOfMessages:   int32(n),
		WaitTimeSeconds:       int32(ceilSeconds(wait)),
		VisibilityTimeout:     int32(ceilSeconds(vis)),
		MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
			sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
			sqstypes.MessageSystemAttributeNameSentTimestamp,
		},
	})
}

// giveBack makes messages received for a receiver that has gone visible
// again at once (ChangeMessageVisibility to 0, one call each: SQSAPI has no
// batch call). One it fails to give back comes back after its visibility,
// as if its receiver had died.
func (w *store) giveBack(ms []sqstypes.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), receiveGrace)
	defer cancel()
	for _, m := range ms {
		_, err := w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		})
		if err != nil {
			id := aws.ToString(m.MessageId)
			if a, ok := m.MessageAttributes[msgAttrID]; ok {
				id = aws.ToString(a.StringValue)
			}
			w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: could not give back a message a stopped receive brought; it comes back after its visibility",
				slog.String("message", id), slog.Any("err", sqsErr("ChangeMessageVisibility", w.cfg.QueueURL, err)))
		}
	}
}

func decodeDelivery(m sqstypes.Message) (world.Delivery, error) {
	d := world.Delivery{MessageID: aws.ToString(m.MessageId), Receipt: aws.ToString(m.ReceiptHandle), Body: []byte(aws.ToString(m.Body))}
	if a, ok := m.MessageAttributes[msgAttrID]; ok {
		d.MessageID = aws.ToString(a.StringValue)
	}
	switch enc := m.MessageAttributes[msgAttrEncoding]; aws.ToString(enc.StringValue) {
	case "base64":
		b, err := base64.StdEncoding.DecodeString(aws.ToString(m.Body))
		if err != nil {
			return d, fmt.Errorf("dynamoworld: SQS message %s: undecodable base64 body: %w", d.MessageID, err)
		}
		d.Body = b
	case "empty":
		d.Body = nil
	}
	if n, err := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil {
		d.Attempt = n
	}
	if d.Attempt < 1 {
		d.Attempt = 1
	}
	if a, ok := m.MessageAttributes[msgAttrEnqueued]; ok {
		if ns, err := strconv.ParseInt(aws.ToString(a.StringValue), 10, 64); err == nil {
			d.EnqueuedAt = time.Unix(0, ns).UTC()
		}
	} else if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		d.EnqueuedAt = time.UnixMilli(ms).UTC()
	}
	return d, nil
}

// hop re-enqueues a world.Message received before its NotBefore for the
// time left, then deletes it; the wake-up of a finished or unknown run is
// deleted without a hop. Other bodies are left alone.
func (w *store) hop(ctx context.Context, d world.Delivery, m sqstypes.Message) (bool, error) {
	msg, err := world.DecodeMessage(d.Body)
	if err != nil || msg.NotBefore.IsZero() {
		return false, nil
	}
	left := msg.NotBefore.Sub(w.now())
	if left <= 0 {
		return false, nil
	}
	if w.wakesNobody(ctx, msg) {
		if _, err := w.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return true, sqsErr("DeleteMessage", w.cfg.QueueURL, err)
		}
		return true, nil
	}
	msg.Hop++
	body, err := world.EncodeMessage(msg)
	if err != nil {
		return false, err
	}
	if err := w.send(ctx, body, min(left, maxQueueDelay), d.MessageID, d.EnqueuedAt); err != nil {
		return false, err
	}
	if _, err := w.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// The hop was sent; this copy comes back and hops again: a duplicate
		// the consumers tolerate.
		return true, sqsErr("DeleteMessage", w.cfg.QueueURL, err)
	}
	return true, nil
}

// wakesNobody reports whether msg is for a run that has finished or does not
// exist (never created, or expired): its wake-up is dropped instead of
// hopping again. It costs one Query per hop; a failed read keeps the
// message.
func (w *store) wakesNobody(ctx context.Context, msg world.Message) bool {
	status, found, err := w.runStatus(ctx, msg.RunID)
	switch {
	case err != nil:
		w.logger.LogAttrs(ctx, slog.LevelDebug, "dynamoworld: could not read the run before a hop; hopping anyway", slog.String("run", msg.RunID), slog.Any("err", err))
		return false
	case found && !status.Terminal():
		return false
	}
	w.logger.LogAttrs(ctx, slog.LevelDebug, "dynamoworld: dropped the wake-up of a finished or unknown run", slog.String("run", msg.RunID), slog.String("status", string(status)), slog.Int("hop", msg.Hop))
	return true
}

// Ack deletes a delivered message.
func (w *store) Ack(ctx context.Context, p *world.AckParams) error {
	if p == nil || p.Receipt == "" {
		return invalid("receipt required")
	}
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	_, err := w.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: aws.String(p.Receipt)})
	if err != nil {
		return sqsErr("DeleteMessage", w.cfg.QueueURL, err)
	}
	return nil
}

// Release makes a delivered message visible again after p.Delay (rounded up
// to whole seconds): ChangeMessageVisibility.
func (w *store) Release(ctx context.Context, p *world.ReleaseParams) error {
	if p == nil {
		return invalid("receipt required")
	}
	return w.changeVisibility(ctx, "release delay", p.Receipt, p.Delay)
}

// Extend hides a delivered message for p.Visibility from now (rounded up to
// whole seconds): ChangeMessageVisibility, which keeps the receipt handle
// valid.
func (w *store) Extend(ctx context.Context, p *world.ExtendParams) error {
	if p == nil {
		return invalid("receipt required")
	}
	return w.changeVisibility(ctx, "visibility", p.Receipt, p.Visibility)
}

// changeVisibility hides the delivery receipt names for d from now.
func (w *store) changeVisibility(ctx context.Context, what, receipt string, d time.Duration) error {
	switch {
	case receipt == "":
		return invalid("receipt required")
	case d < 0 || d > maxVisibility:
		return invalid("%s %s outside 0 to 12h", what, d)
	}
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	_, err := w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: int32(ceilSeconds(d)),
	})
	if err != nil {
		return sqsErr("ChangeMessageVisibility", w.cfg.QueueURL, err)
	}
	return nil
}
