package dynamoworld

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/world"
)

// fakeDDB is a DynamoDBAPI whose calls are functions set by each test (nil:
// an error). It records every TransactWriteItems input.
type fakeDDB struct {
	mu       sync.Mutex
	writes   []*dynamodb.TransactWriteItemsInput
	getItem  func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	putItem  func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	update   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	query    func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	tget     func(*dynamodb.TransactGetItemsInput) (*dynamodb.TransactGetItemsOutput, error)
	twrite   func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	describe func(*dynamodb.DescribeTableInput) (*dynamodb.DescribeTableOutput, error)
	// scriptSchema: GetItem of the schema item goes to getItem too (by
	// default it finds this World's version). Without getItem, a GetItem
	// of a run lease item finds none.
	scriptSchema bool
}

var errUnscripted = errors.New("fake: unscripted call")

func (f *fakeDDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if k := schemaKey(); !f.scriptSchema && getS(in.Key, attrPK) == k.pk && getS(in.Key, attrSK) == k.sk {
		it := k.av() // a table of this World's version
		setN(it, attrVersion, SchemaVersion)
		return &dynamodb.GetItemOutput{Item: it}, nil
	}
	if f.getItem == nil && getS(in.Key, attrSK) == skLease {
		return &dynamodb.GetItemOutput{}, nil // no run lease item (floors.go)
	}
	if f.getItem == nil {
		return nil, errUnscripted
	}
	return f.getItem(in)
}

// PutItem goes to putItem; without it, a put is a transaction of that one
// put (a commit of one item is a PutItem: txn.go, writeOne), recorded and
// answered by twrite.
func (f *fakeDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.putItem == nil {
		tw := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
		}}}}
		if _, err := f.TransactWriteItems(ctx, tw); err != nil {
			return nil, err
		}
		return &dynamodb.PutItemOutput{}, nil
	}
	return f.putItem(in)
}
func (f *fakeDDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.update == nil {
		return nil, errUnscripted
	}
	return f.update(in)
}
func (f *fakeDDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}
func (f *fakeDDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if f.query == nil {
		return &dynamodb.QueryOutput{}, nil
	}
	return f.query(in)
}
func (f *fakeDDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, errUnscripted
}
func (f *fakeDDB) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return nil, errUnscripted
}
func (f *fakeDDB) TransactGetItems(_ context.Context, in *dynamodb.TransactGetItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	if f.tget == nil {
		return nil, errUnscripted
	}
	return f.tget(in)
}
func (f *fakeDDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.mu.Lock()
	f.writes = append(f.writes, in)
	n := len(f.writes)
	f.mu.Unlock()
	if f.twrite == nil {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	return f.twrite(n, in)
}
func (f *fakeDDB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if f.describe == nil {
		return nil, errUnscripted
	}
	return f.describe(in)
}

// serveItems makes ddb answer reads from a fixed set of items: Query
// (the key condition shapes the World uses, on the table) and
// TransactGetItems.
func serveItems(ddb *fakeDDB, items map[itemKey]item) {
	ddb.tget = func(in *dynamodb.TransactGetItemsInput) (*dynamodb.TransactGetItemsOutput, error) {
		out := &dynamodb.TransactGetItemsOutput{Responses: make([]types.ItemResponse, len(in.TransactItems))}
		for i, ti := range in.TransactItems {
			out.Responses[i].Item = items[itemKey{getS(ti.Get.Key, attrPK), getS(ti.Get.Key, attrSK)}]
		}
		return out, nil
	}
	ddb.query = func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		kc := aws.ToString(in.KeyConditionExpression)
		val := func(k string) string { return getS(in.ExpressionAttributeValues, k) }
		pk := val(":v0")
		match := func(sk string) bool {
			switch {
			case strings.Contains(kc, "BETWEEN"):
				return sk >= val(":v1") && sk <= val(":v2")
			case strings.Contains(kc, "begins_with"):
				return strings.HasPrefix(sk, val(":v1"))
			}
			return true
		}
		var out []item
		for k, it := range items {
			if k.pk == pk && match(k.sk) {
				out = append(out, it)
			}
		}
		sort.Slice(out, func(i, j int) bool { return getS(out[i], attrSK) < getS(out[j], attrSK) })
		if in.ScanIndexForward != nil && !*in.ScanIndexForward {
			slices.Reverse(out)
		}
		if in.Limit != nil && int(*in.Limit) < len(out) {
			out = out[:*in.Limit]
		}
		return &dynamodb.QueryOutput{Items: out}, nil
	}
}

// fakeSQS answers GetQueueAttributes with err (nil: success) and records
// sends.
type fakeSQS struct {
	err   error
	mu    sync.Mutex
	sends []*sqs.SendMessageInput
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends = append(f.sends, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("sqs-id")}, nil
}
func (f *fakeSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{}, nil
}
func (f *fakeSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, nil
}
func (f *fakeSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}
func (f *fakeSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{}, f.err
}

// fakeS3 is an in-memory object store (PutObject, GetObject) that counts
// puts; headErr answers HeadBucket.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte
	puts    int
	headErr error
}

func newFakeS3() *fakeS3 { return &fakeS3{objects: map[string][]byte{}} }

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[aws.ToString(in.Key)] = b
	f.puts++
	return &s3.PutObjectOutput{}, nil
}
func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "no such key"}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}
func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return &s3.HeadBucketOutput{}, f.headErr
}

// fakeStreams is a Streamer that is never used.
type fakeStreams struct{ world.Streamer }

// newFakeWorld returns a World on fakes, with no startup check.
func newFakeWorld(t *testing.T, ddb *fakeDDB, s3c *fakeS3, mod func(*Config)) *World {
	t.Helper()
	cfg := Config{
		DynamoDB: ddb, SQS: &fakeSQS{}, S3: s3c, streams: fakeStreams{},
		Table: "skein-test", QueueURL: "http://sqs.local/000000000000/q", Bucket: "skein-test", skipCheck: true,
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// cancel builds a TransactionCanceledException whose reasons line up with
// the transaction: codes[i] for item i ("" = None), items[i] its ALL_OLD.
func cancel(n int, codes map[int]string, items map[int]item) error {
	reasons := make([]types.CancellationReason, n)
	for i := range reasons {
		code := "None"
		if c, ok := codes[i]; ok {
			code = c
		}
		reasons[i] = types.CancellationReason{Code: aws.String(code), Item: items[i]}
	}
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

// indexOf finds the transaction item writing key k with the given kind
// ("put", "update", "delete", "check"); -1 if none.
func indexOf(in *dynamodb.TransactWriteItemsInput, k itemKey, kind string) int {
	for i, ti := range in.TransactItems {
		var key item
		got := ""
		switch {
		case ti.Put != nil:
			key, got = ti.Put.Item, "put"
		case ti.Update != nil:
			key, got = ti.Update.Key, "update"
		case ti.Delete != nil:
			key, got = ti.Delete.Key, "delete"
		case ti.ConditionCheck != nil:
			key, got = ti.ConditionCheck.Key, "check"
		}
		if got == kind && getS(key, attrPK) == k.pk && getS(key, attrSK) == k.sk {
			return i
		}
	}
	return -1
}
