package dynamoworld_test

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
	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// reqMeter records the DynamoDB and S3 requests of a World in order (every
// HTTP attempt), and the inputs it needs to price the writes.
type reqMeter struct {
	mu    sync.Mutex
	ops   []string // "DynamoDB/Query", "S3/ListObjectsV2", ...
	txs   []*dynamodb.TransactWriteItemsInput
	puts  []*dynamodb.PutItemInput
	upds  []*dynamodb.UpdateItemInput
	tgets int // items read by TransactGetItems
}

func (m *reqMeter) add(stack *middleware.Stack) error {
	err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("req-count", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		m.mu.Lock()
		m.ops = append(m.ops, awsmiddleware.GetServiceID(ctx)+"/"+awsmiddleware.GetOperationName(ctx))
		m.mu.Unlock()
		return next.HandleDeserialize(ctx, in)
	}), middleware.After)
	if err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("req-inputs", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		m.mu.Lock()
		switch p := in.Parameters.(type) {
		case *dynamodb.TransactWriteItemsInput:
			m.txs = append(m.txs, p)
		case *dynamodb.PutItemInput:
			m.puts = append(m.puts, p)
		case *dynamodb.UpdateItemInput:
			m.upds = append(m.upds, p)
		case *dynamodb.TransactGetItemsInput:
			m.tgets += len(p.TransactItems)
		}
		m.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

func (m *reqMeter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops, m.txs, m.puts, m.upds, m.tgets = nil, nil, nil, nil, 0
}

func (m *reqMeter) count(op string) int {
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

// summary is the requests by operation, and in order.
func (m *reqMeter) summary() string {
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

// avSize is DynamoDB's size of an attribute value (as bench/ computes it).
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

func itemBytes(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + avSize(v)
	}
	return n
}

func kb(n int) int { return max(1, (n+1023)/1024) }

// units prices what the meter saw as AWS bills it: 2 write units per KB
// (rounded up) per item of a TransactWriteItems, 1 per KB for a single-item
// write, an update or delete sized as the item is stored afterwards (stored;
// 1 KB when unknown); 2 read units per item of a TransactGetItems, 1 per
// strongly consistent Query or GetItem (all under 4 KB here).
func (m *reqMeter) units(stored map[string]int) (wru, rru float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := func(k map[string]types.AttributeValue) string {
		return k["pk"].(*types.AttributeValueMemberS).Value + "/" + k["sk"].(*types.AttributeValueMemberS).Value
	}
	sized := func(k map[string]types.AttributeValue) int {
		if n, ok := stored[key(k)]; ok {
			return n
		}
		return 256
	}
	for _, tx := range m.txs {
		for _, ti := range tx.TransactItems {
			switch {
			case ti.Put != nil:
				wru += 2 * float64(kb(itemBytes(ti.Put.Item)))
			case ti.Update != nil:
				wru += 2 * float64(kb(sized(ti.Update.Key)))
			case ti.Delete != nil:
				wru += 2 * float64(kb(sized(ti.Delete.Key)))
			case ti.ConditionCheck != nil:
				wru += 2 * float64(kb(sized(ti.ConditionCheck.Key)))
			}
		}
	}
	for _, p := range m.puts {
		wru += float64(kb(itemBytes(p.Item)))
	}
	for _, u := range m.upds {
		wru += float64(kb(sized(u.Key)))
	}
	for _, o := range m.ops {
		switch o {
		case "DynamoDB/DeleteItem":
			wru++
		case "DynamoDB/Query", "DynamoDB/GetItem":
			rru++
		}
	}
	return wru, rru + 2*float64(m.tgets)
}

// storedSizes reads every item of a run's partition: "pk/sk" -> size.
func storedSizes(t *testing.T, c dynamoworld.Clients, table, runID string) map[string]int {
	out := map[string]int{}
	res, err := c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "r#" + runID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		out[it["pk"].(*types.AttributeValueMemberS).Value+"/"+it["sk"].(*types.AttributeValueMemberS).Value] = itemBytes(it)
	}
	return out
}

// TestColdRunRequests counts the DynamoDB and S3 requests (and prices
// them) of the message that runs a workflow from start to end on a World
// that has never seen the run, as a cold Lambda invocation does: a client
// in another process started it. The bounds are what the World's cache of
// a run read from its log (doc.go, Priming) and its registered streams
// (Streams) give: one Query, the commits, no S3 listing, new steps created
// lazily (4 write units a serial step, not 6); the counts are logged.
func TestColdRunRequests(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	clean := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, clean)
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	starter, err := dynamoworld.New(ctx, dynamotest.Config(clean, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer starter.Close()
	client, err := workflow.NewClient(workflow.ClientConfig{World: starter, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		start func() (string, error)
		// the most requests the run's message may take, and write units
		ddb, s3List int
		wru         float64
	}{
		{"one step", func() (string, error) {
			run, err := demo.Serial.Start(ctx, client, 1)
			return idOf(run, err)
		}, 5, 0, 16},
		{"three steps", func() (string, error) {
			run, err := demo.Serial.Start(ctx, client, 3)
			return idOf(run, err)
		}, 7, 0, 24},
		{"hundred steps", func() (string, error) {
			run, err := demo.Serial.Start(ctx, client, 100)
			return idOf(run, err)
		}, 104, 0, 450},
		{"one step writing a stream", func() (string, error) {
			run, err := demo.Streamer.Start(ctx, client, demo.Emission{Chunks: 3})
			return idOf(run, err)
		}, 8, 0, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &reqMeter{}
			c := dynamotest.Clients(t, dynamoworld.ClientOptions{APIOptions: []func(*middleware.Stack) error{m.add}})
			cfg := dynamotest.Config(c, r, url)
			cfg.SkipCheck = true
			w, err := dynamoworld.New(ctx, cfg) // a cold process: nothing cached
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			p, err := workflow.NewProcessor(workflow.ProcessorConfig{World: w, Registry: reg, Engine: workflow.EngineOptions{Linger: -1}})
			if err != nil {
				t.Fatal(err)
			}
			runID, err := tc.start()
			if err != nil {
				t.Fatal(err)
			}
			body, err := world.EncodeMessage(world.Message{RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			m.reset()
			if err := p.Process(ctx, body, 1); err != nil {
				t.Fatal(err)
			}
			run, err := starter.GetRun(ctx, &world.GetRunParams{RunID: runID})
			if err != nil || run.Status != world.RunStatusCompleted {
				t.Fatalf("run after its message: %+v, %v", run, err)
			}
			wru, rru := m.units(storedSizes(t, clean, r.Table, runID))
			ddb, list := m.count("DynamoDB"), m.count("S3/ListObjectsV2")
			t.Logf("%s: %d DynamoDB requests, %d S3 requests (%d ListObjectsV2); %.0f WRU, %.0f RRU; %s",
				tc.name, ddb, m.count("S3"), list, wru, rru, m.summary())
			if ddb > tc.ddb || list > tc.s3List || wru > tc.wru {
				t.Errorf("%s: %d DynamoDB requests, %d S3 listings and %.0f write units, want at most %d, %d and %.0f", tc.name, ddb, list, wru, tc.ddb, tc.s3List, tc.wru)
			}
			if tc.name == "one step writing a stream" {
				names, err := starter.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
				if err != nil || len(names) != 1 {
					t.Fatalf("ListStreams: %v, %v", names, err)
				}
				info, err := starter.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: names[0]})
				if err != nil || !info.Done || info.TailIndex != 2 {
					t.Fatalf("the run's stream after its end: %+v, %v; want 3 chunks, closed", info, err)
				}
			}
		})
	}
}

func idOf[O any](run *workflow.Run[O], err error) (string, error) {
	if err != nil {
		return "", err
	}
	return run.ID(), nil
}
