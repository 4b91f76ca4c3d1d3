package dynamoworld

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/world"
)

// Message attributes the queue sets on every SQS message.
const (
	msgAttrID       = "skein-id"  // the World's message ID (stable across redeliveries and hops)
	msgAttrEnqueued = "skein-at"  // when the message was first enqueued (Unix nanoseconds)
	msgAttrEncoding = "skein-enc" // "base64" when the body is not SQS-safe text
)

// settleTimeout bounds settling an idempotency key after a send.
const settleTimeout = 10 * time.Second

// An Enqueue that meets another sender's unconfirmed claim younger than
// pendingFresh reads it again pendingPolls times (waits of pendingPoll,
// doubling: about 0.6s in all), since a live sender confirms its claim
// right after its send; a claim still unconfirmed then, or older, is
// reported as world.ErrKeyPending.
const (
	pendingFresh = 5 * time.Second
	pendingPoll  = 20 * time.Millisecond
	pendingPolls = 5
)

// Dedupe item attributes.
const (
	qMessageID = "mid"
	qClaim     = "cl"
	qState     = "qs"
	qExpires   = "qx"
	qSent      = "sent"
	qPending   = "pending"
)

// Enqueue sends p.Body to the SQS queue, visible after p.Delay.
//
// SQS delays a message by at most 15 minutes. A longer delay needs a body
// that is a world.Message: Enqueue sets its NotBefore to now+Delay and sends
// it with the longest delay; the consumer that receives it early re-enqueues
// it for the time left (Receive does this; a Lambda handler must do the same:
// see world.Message). Delays are rounded up to whole seconds.
//
// With an IdempotencyKey, a conditional item in the table (with a TTL of
// Config.DedupeWindow) claims the key before the send and is confirmed after
// it; a later Enqueue with the key returns the first message's ID with
// Duplicate set once the claim is confirmed (the message sent). A claim not
// confirmed is no proof of a send (its sender may have died in between):
// within the pending grace (30s) of it, Enqueue sends nothing and fails with an
// error matching world.ErrKeyPending, for the caller to retry (a claim
// younger than a few seconds is read again for about 0.6s first: a live
// sender confirms it, and the answer is then Duplicate); after it,
// the next Enqueue takes the claim over and sends: at least once, never
// lost.
func (w *store) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	switch {
	case p == nil:
		return nil, invalid("nil EnqueueParams")
	case p.Delay < 0:
		return nil, invalid("negative delay %s", p.Delay)
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	now := w.now()
	body, delay := p.Body, p.Delay
	if delay > maxQueueDelay {
		m, err := world.DecodeMessage(body)
		if err != nil {
			return nil, fmt.Errorf("%w: a delay of %s is over SQS's 15 minutes, and the body is not a world.Message that could hop: %v", world.ErrInvalid, delay, err)
		}
		m.NotBefore = now.Add(delay)
		if body, err = world.EncodeMessage(m); err != nil {
			return nil, err
		}
		delay = maxQueueDelay
	}
	id := w.ids.New(world.PrefixMsg)
	claim := id
	if p.IdempotencyKey != "" {
		dupID, first, err := w.claimKey(ctx, p.IdempotencyKey, id, now)
		if errors.Is(err, world.ErrKeyPending) {
			return nil, err // another sender's claim: nothing of ours to give up
		}
		if err != nil {
			// The claim may have landed with its answer lost (the
			// caller's context ended): give it up, or it would stand
			// for a message never sent until PendingGrace passed.
			w.settleKey(ctx, p.IdempotencyKey, claim, false)
			return nil, err
		}
		if dupID != "" {
			return &world.EnqueueResult{MessageID: dupID, Duplicate: true}, nil
		}
		id = first
	}
	if err := w.send(ctx, body, delay, id, now); err != nil {
		if p.IdempotencyKey != "" {
			w.settleKey(ctx, p.IdempotencyKey, claim, false)
		}
		return nil, err
	}
	if p.IdempotencyKey != "" {
		w.settleKey(ctx, p.IdempotencyKey, claim, true)
	}
	return &world.EnqueueResult{MessageID: id}, nil
}

// send sends one message; attributes carry the World's ID and first enqueue
// time, and the encoding of a body that SQS would not accept as text.
func (w *store) send(ctx context.Context, body []byte, delay time.Duration, id string, enqueued time.Time) error {
	text, enc := string(body), ""
	switch {
	case len(body) == 0:
		text, enc = "-", "empty" // SQS needs at least one character
	case !sqsSafe(body):
		text, enc = base64.StdEncoding.EncodeToString(body), "base64"
	}
	attrs := map[string]sqstypes.MessageAttributeValue{
		msgAttrID:       {DataType: aws.String("String"), StringValue: aws.String(id)},
		msgAttrEnqueued: {DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(enqueued.UnixNano(), 10))},
	}
	if enc != "" {
		attrs[msgAttrEncoding] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(enc)}
	}
	_, err := w.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(w.cfg.QueueURL), MessageBody: aws.String(text),
		DelaySeconds: int32(ceilSeconds(delay)), MessageAttributes: attrs,
	})
	if err != nil {
		return sqsErr("SendMessage", w.cfg.QueueURL, err)
	}
	return nil
}

// sqsSafe reports whether SQS accepts b as a message body: UTF-8 text of
// #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF.
func sqsSafe(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// claimKey claims an idempotency key for message id. It returns dupID, the
// ID of the message the key already stands for (its send confirmed), or
// the ID to send under (id, or the ID of an unconfirmed claim older than
// PendingGrace, which it takes over). A younger unconfirmed claim, or one
// another sender took over first, is an error matching
// world.ErrKeyPending: its message is not known sent, and answering
// Duplicate would let a caller that acknowledges its own input on that
// answer lose the work if the claim's sender died before sending.
func (w *store) claimKey(ctx context.Context, key, id string, now time.Time) (dupID, sendID string, err error) {
	k := dedupeKey(key)
	exp := now.Add(w.cfg.DedupeWindow)
	it := k.av()
	it[qMessageID] = str(id)
	it[qClaim] = str(id)
	it[qState] = str(qPending)
	it[aCreated] = num(now.UnixNano())
	it[qExpires] = num(exp.UnixNano())
	it[attrTTL] = num(exp.Unix())
	e := newExpr()
	_, err = w.ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(w.cfg.Table), Item: it,
		ConditionExpression:      aws.String(e.notExists() + " OR " + e.n(qExpires) + " < " + e.v(num(now.UnixNano()))),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, failed := conditionFailed(err)
	switch {
	case err == nil:
		return "", id, nil
	case !failed:
		return "", "", ddbErr("PutItem", w.cfg.Table, err)
	case getS(old, qClaim) == id:
		return "", id, nil // our own put, retried by the SDK after a lost response
	case getS(old, qState) == qSent:
		return getS(old, qMessageID), "", nil
	case now.Before(getT(old, aCreated).Add(w.cfg.pendingGrace)):
		if sent, ok := w.awaitSent(ctx, k, old, now); ok {
			return sent, "", nil
		}
		return "", "", keyPending(key, old, w.cfg.pendingGrace)
	}
	// An unconfirmed claim older than the grace period: its sender failed.
	// Take it over, keeping its message ID.
	u := &updateBuilder{e: newExpr()}
	u.set(qClaim, str(id))
	u.set(aCreated, num(now.UnixNano()))
	_, err = w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: k.av(), UpdateExpression: aws.String(u.String()),
		ConditionExpression:      aws.String(u.e.n(qClaim) + " = " + u.e.v(str(getS(old, qClaim)))),
		ExpressionAttributeNames: u.e.nameMap(), ExpressionAttributeValues: u.e.valueMap(),
	})
	if _, failed := conditionFailed(err); failed {
		// Another sender took it over first (or confirmed it): not known
		// sent here either; the retry sees which.
		return "", "", fmt.Errorf("%w: idempotency key %q: its claim (message %s) was taken over by another sender", world.ErrKeyPending, key, getS(old, qMessageID))
	}
	if err != nil {
		return "", "", ddbErr("UpdateItem", w.cfg.Table, err)
	}
	return "", getS(old, qMessageID), nil
}

// awaitSent reads again, a few times, the claim old of a sender that may
// still be sending (see pendingFresh), and returns its message's ID once
// the claim is confirmed. It gives up at once on a claim older than
// pendingFresh, one that changed hands or went away, or a failed read:
// the caller then reports the key pending, which is never wrong.
func (w *store) awaitSent(ctx context.Context, k itemKey, old item, now time.Time) (string, bool) {
	if now.Sub(getT(old, aCreated)) > pendingFresh {
		return "", false
	}
	wait := pendingPoll
	for range pendingPolls {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", false
		case <-t.C:
		}
		it, err := w.getItem(ctx, k)
		if err != nil || it == nil || getS(it, qClaim) != getS(old, qClaim) {
			return "", false
		}
		if getS(it, qState) == qSent {
			return getS(it, qMessageID), true
		}
		wait *= 2
	}
	return "", false
}

// keyPending is the error for a key whose claim old is not confirmed and
// younger than grace.
func keyPending(key string, old item, grace time.Duration) error {
	at := getT(old, aCreated).Add(grace)
	return fmt.Errorf("%w: idempotency key %q is claimed for message %s, whose send is not confirmed; it may be taken over after %s",
		world.ErrKeyPending, key, getS(old, qMessageID), at.UTC().Format(time.RFC3339Nano))
}

// settleKey confirms a claim after the send, or gives it up after a failed
// send so that a retry can send at once. Best effort: an unconfirmed claim
// only delays a retry by the grace period. It runs on a context of its own
// (settleTimeout), not the caller's: a send that failed because the
// caller's context ended (a Worker stopping) must still give its claim up,
// or for PendingGrace every Enqueue under the key would fail with
// world.ErrKeyPending, each caller retrying until the grace ends.
func (w *store) settleKey(ctx context.Context, key, claim string, sent bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	e := newExpr()
	cond := aws.String(e.n(qClaim) + " = " + e.v(str(claim)))
	var err error
	if sent {
		upd := e.n(qState) + " = " + e.v(str(qSent))
		_, err = w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(w.cfg.Table), Key: dedupeKey(key).av(), UpdateExpression: aws.String("SET " + upd),
			ConditionExpression: cond, ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		})
	} else {
		_, err = w.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(w.cfg.Table), Key: dedupeKey(key).av(),
			ConditionExpression: cond, ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		})
	}
	if _, failed := conditionFailed(err); err != nil && !failed {
		w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: could not settle an idempotency key", slog.Bool("sent", sent), slog.Any("err", err))
	}
}
