package dynamoworld

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/world"
)

// claimsDDB keeps idempotency claims as DynamoDB would, and fails a call on
// an ended context as the SDK does.
type claimsDDB struct {
	*fakeDDB
	mu     sync.Mutex
	claims map[string]item // by the dedupe item's partition key
	// onGet, when set, sees (and may change) a claim before a GetItem
	// returns it.
	onGet func(it item)
}

func (d *claimsDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	it, ok := d.claims[getS(in.Key, attrPK)]
	if !ok {
		return d.fakeDDB.GetItem(ctx, in, o...)
	}
	if d.onGet != nil {
		d.onGet(it)
	}
	return &dynamodb.GetItemOutput{Item: it}, nil
}

func (d *claimsDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	pk := getS(in.Item, attrPK)
	if old, ok := d.claims[pk]; ok {
		return nil, &types.ConditionalCheckFailedException{Item: old}
	}
	d.claims[pk] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (d *claimsDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if it, ok := d.claims[getS(in.Key, attrPK)]; ok {
		it[qState] = str(qSent)
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

func (d *claimsDDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.claims, getS(in.Key, attrPK))
	return &dynamodb.DeleteItemOutput{}, nil
}

// cancellingSQS ends the caller's context during its first send, which
// then fails with the context's error.
type cancellingSQS struct {
	*fakeSQS
	cancel context.CancelFunc
	once   sync.Once
}

func (q *cancellingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	failed := false
	q.once.Do(func() { q.cancel(); failed = true })
	if failed {
		return nil, ctx.Err()
	}
	return q.fakeSQS.SendMessage(ctx, in, o...)
}

// TestEnqueueCancelledGivesKeyUp: an Enqueue whose send fails because its
// caller's context ended gives its idempotency key up, so that the next
// Enqueue under the key sends at once instead of reporting a Duplicate of
// a message never sent. A Worker stopped while it sent a message back for
// an executor of another version left such a claim; the message it then
// released was received by the next executor, whose send-back under the
// same key was answered Duplicate, and which acknowledged the run's only
// message (TestVersionsOnDynamo/pin on a slow LocalStack: the run of v0
// never ended).
func TestEnqueueCancelledGivesKeyUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ddb := &claimsDDB{fakeDDB: &fakeDDB{}, claims: map[string]item{}}
	q := &cancellingSQS{fakeSQS: &fakeSQS{}, cancel: cancel}
	w := newFakeWorld(t, ddb.fakeDDB, newFakeS3(), func(c *Config) { c.DynamoDB, c.SQS = ddb, q })
	body, err := world.EncodeMessage(world.Message{RunID: testIDs.New(world.PrefixRun), Refused: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := &world.EnqueueParams{Body: body, IdempotencyKey: "refused:k"}
	if _, err := w.Enqueue(ctx, p); err == nil {
		t.Fatal("Enqueue whose context ended during the send: no error")
	}
	res, err := w.Enqueue(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || len(q.sends) != 1 {
		t.Fatalf("Enqueue after a send cancelled with its caller: %+v, %d sends; want the message sent, not a Duplicate of one never sent", res, len(q.sends))
	}
}

// cancellingDDB ends the caller's context once the first claim has landed,
// so that the claim's answer is lost.
type cancellingDDB struct {
	*claimsDDB
	cancel context.CancelFunc
	once   sync.Once
}

func (d *cancellingDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.claimsDDB.PutItem(ctx, in, o...)
	lost := false
	d.once.Do(func() { d.cancel(); lost = true })
	if lost {
		return nil, ctx.Err()
	}
	return out, err
}

// TestEnqueueClaimAnswerLostGivesKeyUp: a claim whose answer was lost to
// the caller's ended context is given up too.
func TestEnqueueClaimAnswerLostGivesKeyUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ddb := &cancellingDDB{claimsDDB: &claimsDDB{fakeDDB: &fakeDDB{}, claims: map[string]item{}}, cancel: cancel}
	q := &fakeSQS{}
	w := newFakeWorld(t, ddb.fakeDDB, newFakeS3(), func(c *Config) { c.DynamoDB, c.SQS = ddb, q })
	p := &world.EnqueueParams{Body: []byte("x"), IdempotencyKey: "refused:k"}
	if _, err := w.Enqueue(ctx, p); err == nil {
		t.Fatal("Enqueue whose claim's answer was lost: no error")
	}
	res, err := w.Enqueue(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || len(q.sends) != 1 {
		t.Fatalf("Enqueue after a claim whose answer was lost: %+v, %d sends; want the message sent", res, len(q.sends))
	}
}

// TestEnqueueStrandedClaimNotDuplicate: a sender that died between claiming
// an idempotency key and sending (a SIGKILL: nothing gives the claim up)
// leaves a claim for a message never sent. An Enqueue under the key within
// PendingGrace used to be answered Duplicate, and a caller that
// acknowledges its own input on that answer (an executor sending a
// message back, or hopping a long delay) lost the run's only message. It
// must fail with world.ErrKeyPending instead, sending nothing; once the
// grace has passed, it takes the claim over and sends.
func TestEnqueueStrandedClaimNotDuplicate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	ddb := &claimsDDB{fakeDDB: &fakeDDB{}, claims: map[string]item{}}
	q := &fakeSQS{}
	w := newFakeWorld(t, ddb.fakeDDB, newFakeS3(), func(c *Config) {
		c.DynamoDB, c.SQS, c.now, c.pendingGrace = ddb, q, clock, 30*time.Second
	})
	const key = "refused:k"
	// The dead sender's claim, as its Enqueue left it before SendMessage.
	if dup, _, err := w.s.claimKey(context.Background(), key, "msg_dead", now); err != nil || dup != "" {
		t.Fatalf("claim: %q, %v", dup, err)
	}
	p := &world.EnqueueParams{Body: []byte("x"), IdempotencyKey: key}
	res, err := w.Enqueue(context.Background(), p)
	if !errors.Is(err, world.ErrKeyPending) || res != nil || len(q.sends) != 0 {
		t.Fatalf("Enqueue under a claim whose sender died before sending: %+v, %v, %d sends; want world.ErrKeyPending and nothing sent (a Duplicate loses the message)", res, err, len(q.sends))
	}
	now = now.Add(31 * time.Second)
	res, err = w.Enqueue(context.Background(), p)
	if err != nil || res.Duplicate || res.MessageID != "msg_dead" || len(q.sends) != 1 {
		t.Fatalf("Enqueue after the grace: %+v, %v, %d sends; want the claim taken over and message msg_dead sent", res, err, len(q.sends))
	}
	res, err = w.Enqueue(context.Background(), p)
	if err != nil || !res.Duplicate || res.MessageID != "msg_dead" || len(q.sends) != 1 {
		t.Fatalf("Enqueue after the send: %+v, %v, %d sends; want a Duplicate of msg_dead", res, err, len(q.sends))
	}
}

// TestEnqueuePendingConfirmedMeanwhile: an Enqueue that meets a fresh
// claim of a sender still sending reads it again, and once the sender has
// confirmed it (here: at the first read) answers Duplicate, sending
// nothing, rather than making its caller retry.
func TestEnqueuePendingConfirmedMeanwhile(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ddb := &claimsDDB{fakeDDB: &fakeDDB{}, claims: map[string]item{}}
	q := &fakeSQS{}
	w := newFakeWorld(t, ddb.fakeDDB, newFakeS3(), func(c *Config) {
		c.DynamoDB, c.SQS, c.now = ddb, q, func() time.Time { return now }
	})
	const key = "hook:k"
	if dup, _, err := w.s.claimKey(context.Background(), key, "msg_live", now); err != nil || dup != "" {
		t.Fatalf("claim: %q, %v", dup, err)
	}
	reads := 0
	ddb.onGet = func(it item) { reads++; it[qState] = str(qSent) } // the live sender confirms
	res, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: []byte("x"), IdempotencyKey: key})
	if err != nil || !res.Duplicate || res.MessageID != "msg_live" || len(q.sends) != 0 || reads != 1 {
		t.Fatalf("Enqueue beside a sender that confirms: %+v, %v, %d sends, %d reads; want a Duplicate of msg_live after one read", res, err, len(q.sends), reads)
	}
}
