package dynamoworld

import (
	"context"
	"encoding/base64"
	"errors"
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

// Receive long-polls the queue for up to p.Max messages (at most 10 a call),
// waiting up to p.Wait (in calls of at most 20s) for the first, and hides
// them for p.Visibility. Times are rounded up to whole seconds, as SQS
// counts them. Attempt is SQS's ApproximateReceiveCount.
//
// A message whose body is a world.Message with NotBefore in the future (a
// delay longer than SQS's 15 minutes) is not returned: Receive re-enqueues it
// for the time left (at most 15 minutes more; Hop+1) and deletes it, unless
// its run has finished or does not exist: then it only deletes it (one
// Query of the run per hop).
func (w *World) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	switch {
	case p == nil:
		return nil, invalid("nil ReceiveParams")
	case p.Max < 0 || p.Wait < 0 || p.Visibility < 0:
		return nil, invalid("negative receive parameter")
	case p.Visibility > maxVisibility:
		return nil, invalid("visibility %s is over SQS's 12h", p.Visibility)
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(w.closeCtx, cancel)
	defer stop()
	n := min(max(p.Max, 1), maxReceiveBatch)
	vis := p.Visibility
	if vis == 0 {
		vis = w.cfg.DefaultVisibility
	}
	deadline := time.Now().Add(p.Wait)
	for {
		wait := min(time.Until(deadline), maxLongPoll)
		out, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
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
		if err != nil {
			if w.closed.Load() && errors.Is(err, context.Canceled) {
				return nil, world.ErrClosed
			}
			return nil, sqsErr("ReceiveMessage", w.cfg.QueueURL, err)
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
func (w *World) hop(ctx context.Context, d world.Delivery, m sqstypes.Message) (bool, error) {
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
	if err := w.send(ctx, body, min(left, MaxQueueDelay), d.MessageID, d.EnqueuedAt); err != nil {
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
func (w *World) wakesNobody(ctx context.Context, msg world.Message) bool {
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
func (w *World) Ack(ctx context.Context, p *world.AckParams) error {
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
func (w *World) Release(ctx context.Context, p *world.ReleaseParams) error {
	if p == nil {
		return invalid("receipt required")
	}
	return w.changeVisibility(ctx, "release delay", p.Receipt, p.Delay)
}

// Extend hides a delivered message for p.Visibility from now (rounded up to
// whole seconds): ChangeMessageVisibility, which keeps the receipt handle
// valid.
func (w *World) Extend(ctx context.Context, p *world.ExtendParams) error {
	if p == nil {
		return invalid("receipt required")
	}
	return w.changeVisibility(ctx, "visibility", p.Receipt, p.Visibility)
}

// changeVisibility hides the delivery receipt names for d from now.
func (w *World) changeVisibility(ctx context.Context, what, receipt string, d time.Duration) error {
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
