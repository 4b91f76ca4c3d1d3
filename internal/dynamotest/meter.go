package dynamotest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/skeinflow/skein/dynamoworld"
)

// Meter records the requests of the clients it is added to (every HTTP
// attempt, in order, as "service/operation"), and the inputs it needs to
// price DynamoDB writes as AWS bills them (Units). Add it with
// aws.Config.APIOptions (Clients, Options.APIOptions). It is safe for
// concurrent use.
type Meter struct {
	mu    sync.Mutex
	ops   []string // "DynamoDB/Query", "S3/ListObjectsV2", ...
	txs   []*dynamodb.TransactWriteItemsInput
	puts  []*dynamodb.PutItemInput
	upds  []*dynamodb.UpdateItemInput
	tgets int // items read by TransactGetItems
	// ordered: every write input, in order (Partitions).
	ordered []any
}

// Add installs the meter on a client's middleware stack.
func (m *Meter) Add(stack *middleware.Stack) error {
	err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("skein-meter-count", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		m.mu.Lock()
		m.ops = append(m.ops, awsmiddleware.GetServiceID(ctx)+"/"+awsmiddleware.GetOperationName(ctx))
		m.mu.Unlock()
		return next.HandleDeserialize(ctx, in)
	}), middleware.After)
	if err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("skein-meter-inputs", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		m.mu.Lock()
		switch p := in.Parameters.(type) {
		case *dynamodb.TransactWriteItemsInput:
			m.txs = append(m.txs, p)
			m.ordered = append(m.ordered, p)
		case *dynamodb.PutItemInput:
			m.puts = append(m.puts, p)
			m.ordered = append(m.ordered, p)
		case *dynamodb.UpdateItemInput:
			m.upds = append(m.upds, p)
			m.ordered = append(m.ordered, p)
		case *dynamodb.DeleteItemInput:
			m.ordered = append(m.ordered, p)
		case *dynamodb.TransactGetItemsInput:
			m.tgets += len(p.TransactItems)
		}
		m.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// Reset forgets what was recorded.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops, m.txs, m.puts, m.upds, m.tgets, m.ordered = nil, nil, nil, nil, 0, nil
}

// Count returns the requests of op: a service ("DynamoDB") or a
// "service/operation".
func (m *Meter) Count(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, o := range m.ops {
		if o == op || strings.HasPrefix(o, op+"/") {
			n++
		}
	}
	return n
}

// Summary lists the requests by operation, and in order.
func (m *Meter) Summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	by := map[string]int{}
	for _, o := range m.ops {
		by[o]++
	}
	var parts []string
	for o, n := range by {
		parts = append(parts, fmt.Sprintf("%s %d", o, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ") + "; in order: " + strings.Join(m.ops, " ")
}

// Units is what AWS would bill for the recorded requests.
type Units struct {
	// WRU: 2 write units per KB (rounded up) per item of a
	// TransactWriteItems, 1 per KB for a single PutItem or UpdateItem. A
	// Put is sized by its item; an item updated, deleted or checked as it
	// is stored afterwards (Units' stored argument; 256 bytes when unknown).
	// Single DeleteItems are not included (see Count).
	WRU float64
	// RRU: 2 read units per item of a TransactGetItems, 1 per strongly
	// consistent Query or GetItem (all under 4 KB here).
	RRU float64
	// TxItems is the items of the TransactWriteItems.
	TxItems int
}

// Units prices the recorded requests; stored maps "pk/sk" to an item's size
// as stored (StoredSizes).
func (m *Meter) Units(stored map[string]int) Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	sized := func(k map[string]types.AttributeValue) int {
		if n, ok := stored[itemKey(k)]; ok {
			return n
		}
		return 256
	}
	var u Units
	for _, tx := range m.txs {
		for _, ti := range tx.TransactItems {
			u.TxItems++
			switch {
			case ti.Put != nil:
				u.WRU += 2 * float64(kb(ItemBytes(ti.Put.Item)))
			case ti.Update != nil:
				u.WRU += 2 * float64(kb(sized(ti.Update.Key)))
			case ti.Delete != nil:
				u.WRU += 2 * float64(kb(sized(ti.Delete.Key)))
			case ti.ConditionCheck != nil:
				u.WRU += 2 * float64(kb(sized(ti.ConditionCheck.Key)))
			}
		}
	}
	for _, p := range m.puts {
		u.WRU += float64(kb(ItemBytes(p.Item)))
	}
	for _, up := range m.upds {
		u.WRU += float64(kb(sized(up.Key)))
	}
	for _, o := range m.ops {
		if o == "DynamoDB/Query" || o == "DynamoDB/GetItem" {
			u.RRU++
		}
	}
	u.RRU += 2 * float64(m.tgets)
	return u
}

// StoredSizes reads every item of a run's partition with c: "pk/sk" -> size.
func StoredSizes(tb testing.TB, c dynamoworld.Clients, table, runID string) map[string]int {
	tb.Helper()
	out := map[string]int{}
	var start map[string]types.AttributeValue
	for {
		res, err := c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
			TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(true),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "r#" + runID}},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			tb.Fatal(err)
		}
		for _, it := range res.Items {
			out[itemKey(it)] = ItemBytes(it)
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out
		}
		start = res.LastEvaluatedKey
	}
}

func itemKey(k map[string]types.AttributeValue) string {
	return k["pk"].(*types.AttributeValueMemberS).Value + "/" + k["sk"].(*types.AttributeValueMemberS).Value
}

// ItemBytes is DynamoDB's size of an item: its attribute names and values.
func ItemBytes(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + avSize(v)
	}
	return n
}

// avSize is DynamoDB's size of an attribute value: string and binary
// bytes, about one byte per two digits of a number, a map's entries plus 3.
func avSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + avSize(e) + 1
		}
		return n
	}
	return 8
}

func kb(n int) int { return max(1, (n+1023)/1024) }
