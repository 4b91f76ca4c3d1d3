package dynamoworld

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/world"
)

func TestEnqueueLongDelayHops(t *testing.T) {
	q := &fakeSQS{}
	w := newFakeWorld(t, &fakeDDB{}, newFakeS3(), func(c *Config) { c.SQS = q })
	run := testIDs.New(world.PrefixRun)
	body, _ := world.EncodeMessage(world.Message{RunID: run})
	before := time.Now()
	if _, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: body, Delay: 36 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	sent := q.sends[0]
	m, err := world.DecodeMessage([]byte(aws.ToString(sent.MessageBody)))
	if err != nil || sent.DelaySeconds != 900 || m.NotBefore.Before(before.Add(36*time.Hour)) || m.NotBefore.After(time.Now().Add(36*time.Hour)) {
		t.Fatalf("a 36h delay: sent with delay %ds and NotBefore %v, %v; want 900s and now+36h", sent.DelaySeconds, m.NotBefore, err)
	}
	_, err = w.Enqueue(context.Background(), &world.EnqueueParams{Body: []byte("not a message"), Delay: time.Hour})
	if !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("a 1h delay on a body that cannot hop: %v, want ErrInvalid", err)
	}
	// Sub-second delays round up: never early.
	if _, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: body, Delay: 300 * time.Millisecond}); err != nil || q.sends[1].DelaySeconds != 1 {
		t.Fatalf("a 300ms delay: %v, delay %d s; want 1", err, q.sends[1].DelaySeconds)
	}
}

func TestEnqueueBinaryBody(t *testing.T) {
	q := &fakeSQS{}
	w := newFakeWorld(t, &fakeDDB{}, newFakeS3(), func(c *Config) { c.SQS = q })
	bin := []byte("a\x00\xffb")
	if _, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: bin}); err != nil {
		t.Fatal(err)
	}
	sent := q.sends[0]
	if aws.ToString(sent.MessageAttributes[msgAttrEncoding].StringValue) != "base64" || aws.ToString(sent.MessageBody) != base64.StdEncoding.EncodeToString(bin) {
		t.Fatalf("a binary body went out as %q", aws.ToString(sent.MessageBody))
	}
	d, err := decodeDelivery(sqstypes.Message{Body: sent.MessageBody, MessageAttributes: sent.MessageAttributes, ReceiptHandle: aws.String("r")})
	if err != nil || string(d.Body) != string(bin) || d.Attempt != 1 {
		t.Fatalf("decoded delivery %+v, %v", d, err)
	}
}

// TestEnqueueDedupeStates walks the idempotency key's claim through its
// answers: sent, pending within the grace period, pending past it (taken
// over, keeping the first message ID), and our own claim met again after a
// retried put.
func TestEnqueueDedupeStates(t *testing.T) {
	now := time.Now().UTC()
	for _, tc := range []struct {
		name    string
		old     func(claim string) item
		dup     bool
		keepsID bool
		pending bool // fails with world.ErrKeyPending, nothing sent
	}{
		{"sent", func(string) item {
			return item{qMessageID: str("msg_first"), qClaim: str("c1"), qState: str(qSent), aCreated: num(now.UnixNano())}
		}, true, true, false},
		{"pending", func(string) item {
			return item{qMessageID: str("msg_first"), qClaim: str("c1"), qState: str(qPending), aCreated: num(now.UnixNano())}
		}, false, false, true},
		{"abandoned", func(string) item {
			return item{qMessageID: str("msg_first"), qClaim: str("c1"), qState: str(qPending), aCreated: num(now.Add(-time.Hour).UnixNano())}
		}, false, true, false},
		{"own claim", func(claim string) item {
			return item{qMessageID: str(claim), qClaim: str(claim), qState: str(qPending), aCreated: num(now.UnixNano())}
		}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeSQS{}
			ddb := &fakeDDB{}
			w := newFakeWorld(t, ddb, newFakeS3(), func(c *Config) { c.SQS = q })
			ddb.putItem = func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				return nil, &types.ConditionalCheckFailedException{Item: tc.old(getS(in.Item, qClaim))}
			}
			ddb.update = func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return &dynamodb.UpdateItemOutput{}, nil
			}
			res, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: []byte("x"), IdempotencyKey: "k"})
			if tc.pending {
				if !errors.Is(err, world.ErrKeyPending) || res != nil || len(q.sends) != 0 {
					t.Fatalf("a claim pending within the grace: %+v, %v, %d sends; want world.ErrKeyPending and nothing sent", res, err, len(q.sends))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Duplicate != tc.dup || (tc.keepsID && res.MessageID != "msg_first") {
				t.Fatalf("result %+v, want Duplicate %v (first ID kept: %v)", res, tc.dup, tc.keepsID)
			}
			if sent := len(q.sends) > 0; sent == tc.dup {
				t.Fatalf("%d sends for a duplicate=%v enqueue", len(q.sends), tc.dup)
			}
		})
	}
}
