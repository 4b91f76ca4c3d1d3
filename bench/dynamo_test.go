package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// The dynamoworld benchmarks run against the emulators (DynamoDB Local,
// ElasticMQ, moto S3; bash localstack/emulators.sh start) and are skipped
// without them. Each reports, per operation: requests by service (every
// HTTP attempt), the capacity DynamoDB Local reports (ReturnConsumedCapacity;
// it says 2 for any transaction), the write and read request units AWS would
// bill for the same items (2 per KB per item of a TransactWriteItems, see
// awsUnits), the cost of those units per million operations at on-demand
// list prices, and latency percentiles.

// AWS on-demand list prices, us-east-1, per million requests or units.
const (
	priceWRU   = 0.625 // DynamoDB write request unit
	priceRRU   = 0.125 // DynamoDB read request unit
	priceSQS   = 0.40  // SQS standard request (64 KB chunk)
	priceS3Put = 5.00  // S3 PUT, COPY, POST, LIST
	priceS3Get = 0.40  // S3 GET, HEAD
)

type dynBench struct {
	m       *dynamotest.Meter
	clients dynamoworld.Clients
	w       *dynamoworld.World
	cfg     dynamoworld.Config
	base    dynamoworld.Stats // the World's capacity at reset
}

func (db *dynBench) reset() {
	db.m.Reset()
	db.base = db.w.Stats()
}

func newDynBench(b *testing.B, mw ...func(*middleware.Stack) error) *dynBench {
	b.Helper()
	dynamotest.Require(b)
	m := &dynamotest.Meter{}
	c := dynamotest.Clients(b, dynamoworld.ClientOptions{}, append([]func(*middleware.Stack) error{m.Add}, mw...)...)
	r, url := dynamotest.NewResources(b, c)
	cfg := dynamotest.Config(c, r, url)
	w, err := dynamoworld.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	w.ReportCapacity()
	return &dynBench{m: m, clients: c, w: w, cfg: cfg}
}

var dynIDs = world.NewIDSource(nil, nil)

func dynAppend(b *testing.B, w *dynamoworld.World, runID string, evs ...world.EventInput) {
	if _, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs}); err != nil {
		b.Fatal(err)
	}
}

func dynRun(b *testing.B, w *dynamoworld.World) string {
	id := dynIDs.New(world.PrefixRun)
	dynAppend(b, w, id, world.EventInput{Data: &world.RunCreated{WorkflowName: "bench", Input: json.RawMessage(`{"order":"A-1001","items":3}`)}},
		world.EventInput{Data: &world.RunStarted{}})
	return id
}

// serialStep is the commit of one serial step: step k completed, step k+1
// created and started. A result and an input of about 100 bytes.
func serialStep(prev, next string, k int) []world.EventInput {
	payload := json.RawMessage(fmt.Sprintf(`{"step":%d,"data":"%s"}`, k, strings.Repeat("x", 80)))
	var evs []world.EventInput
	if prev != "" {
		evs = append(evs, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: payload}})
	}
	return append(evs,
		world.EventInput{CorrelationID: next, Data: &world.StepCreated{StepName: "charge-card", Input: payload}},
		world.EventInput{CorrelationID: next, Data: &world.StepStarted{LeaseTTL: time.Minute}})
}

func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return float64(s[max(0, i)].Microseconds()) / 1000
}

// report writes the per-op metrics of a DynamoDB benchmark.
func (db *dynBench) report(b *testing.B, n int, lat []time.Duration, runs ...string) {
	// Read units: 2 per item of a TransactGetItems, 1 per strongly consistent
	// Query or GetItem (their items here are under 4 KB). Counted before the
	// item sizes are read below, with the same client.
	ddbReqs := db.m.Count("DynamoDB")
	reads := db.m.Units(nil).RRU
	stored := map[string]int{}
	for _, r := range runs {
		for k, v := range dynamotest.StoredSizes(b, db.clients, db.cfg.Table, r) {
			stored[k] = v
		}
	}
	u := db.m.Units(stored)
	wru, items := u.WRU, u.TxItems
	st := db.w.Stats()
	st.ReadCapacity -= db.base.ReadCapacity
	st.WriteCapacity -= db.base.WriteCapacity
	per := func(x float64) float64 { return x / float64(n) }
	rru := per(reads)
	b.ReportMetric(per(float64(ddbReqs)), "ddb-req/op")
	b.ReportMetric(per(float64(items)), "tx-items/op")
	b.ReportMetric(per(st.WriteCapacity), "local-wcu/op")
	b.ReportMetric(per(st.ReadCapacity), "local-rcu/op")
	b.ReportMetric(per(wru), "aws-wru/op")
	b.ReportMetric(rru, "aws-rru/op")
	b.ReportMetric(per(wru)*priceWRU+rru*priceRRU, "usd/M-op")
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 99), "p99-ms")
}

// BenchmarkDynamoSerialStep: one serial step per op, the commit of step k's
// completion with step k+1's creation and start, by the World that wrote
// the run last (warm: no read), and by a World that has never seen it
// (cold: one TransactGetItems first, as after a Lambda cold start).
func BenchmarkDynamoSerialStep(b *testing.B) {
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			db := newDynBench(b)
			run := dynRun(b, db.w)
			prev := ""
			for k := range 20 { // warm up
				next := dynIDs.New(world.PrefixStep)
				dynAppend(b, db.w, run, serialStep(prev, next, k)...)
				prev = next
			}
			var cold []*dynamoworld.World
			if mode == "cold" {
				for range b.N {
					w, err := dynamoworld.New(context.Background(), db.cfg)
					if err != nil {
						b.Fatal(err)
					}
					w.ReportCapacity()
					cold = append(cold, w)
				}
			}
			db.reset()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				w := db.w
				if mode == "cold" {
					w = cold[i]
				}
				next := dynIDs.New(world.PrefixStep)
				t0 := time.Now()
				dynAppend(b, w, run, serialStep(prev, next, i)...)
				lat = append(lat, time.Since(t0))
				prev = next
			}
			b.StopTimer()
			if mode == "cold" {
				var rc, wc float64
				for _, w := range cold {
					rc += w.Stats().ReadCapacity
					wc += w.Stats().WriteCapacity
					w.Close()
				}
				b.ReportMetric(rc/float64(b.N), "cold-local-rcu/op")
				b.ReportMetric(wc/float64(b.N), "cold-local-wcu/op")
			}
			db.report(b, b.N, lat, run)
		})
	}
}

// BenchmarkDynamoAppendOne: one single-event commit per op (wait_created),
// warm.
func BenchmarkDynamoAppendOne(b *testing.B) {
	db := newDynBench(b)
	run := dynRun(b, db.w)
	for range 20 {
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: dynIDs.New(world.PrefixWait), Data: &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}})
	}
	db.reset()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: dynIDs.New(world.PrefixWait), Data: &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}})
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	db.report(b, b.N, lat, run)
}

// BenchmarkDynamoReadStep: reading steps of a run of 20 serial steps, with
// a fresh World (no cache involved): GetStep of a completed step (it has
// an item), GetStep of the running step (created and started by the newest
// commit, it has no item: its state is read from that commit), and
// ListSteps of all 21 steps in one page.
func BenchmarkDynamoReadStep(b *testing.B) {
	for _, mode := range []string{"completed", "running", "list"} {
		b.Run(mode, func(b *testing.B) {
			db := newDynBench(b)
			run := dynRun(b, db.w)
			var steps []string
			prev := ""
			for k := range 21 {
				next := dynIDs.New(world.PrefixStep)
				dynAppend(b, db.w, run, serialStep(prev, next, k)...)
				steps = append(steps, next)
				prev = next
			}
			w, err := dynamoworld.New(context.Background(), db.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			db.reset()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				switch mode {
				case "completed", "running":
					id := steps[len(steps)-2]
					if mode == "running" {
						id = steps[len(steps)-1]
					}
					st, err := w.GetStep(context.Background(), &world.GetStepParams{RunID: run, StepID: id})
					if err != nil || (mode == "running") != (st.Status == world.StepStatusRunning) {
						b.Fatalf("GetStep: %+v, %v", st, err)
					}
				case "list":
					page, err := w.ListSteps(context.Background(), &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Limit: 100}})
					if err != nil || len(page.Items) != len(steps) {
						b.Fatalf("ListSteps: %d steps, %v", len(page.Items), err)
					}
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			db.report(b, b.N, lat, run)
		})
	}
}

// BenchmarkDynamoWholeRun: a whole run of 20 serial steps per op (create and
// start, 20 step commits, the last with the run's completion), amortized:
// the figures are per serial step.
func BenchmarkDynamoWholeRun(b *testing.B) {
	const steps = 20
	db := newDynBench(b)
	db.reset()
	var runs []string
	lat := make([]time.Duration, 0, b.N*steps)
	b.ResetTimer()
	for range b.N {
		run := dynRun(b, db.w)
		runs = append(runs, run)
		prev := ""
		for k := range steps {
			next := dynIDs.New(world.PrefixStep)
			t0 := time.Now()
			dynAppend(b, db.w, run, serialStep(prev, next, k)...)
			lat = append(lat, time.Since(t0))
			prev = next
		}
		dynAppend(b, db.w, run, world.EventInput{CorrelationID: prev, Data: &world.StepCompleted{Result: json.RawMessage(`"ok"`)}},
			world.EventInput{Data: &world.RunCompleted{Output: json.RawMessage(`"done"`)}})
	}
	b.StopTimer()
	db.report(b, b.N*steps, lat, runs...)
}

// BenchmarkDynamoCommitLatency interleaves, op by op, a serial step's
// commit through the World (warm) with the two reference points measured
// the same way against the same DynamoDB: a bare conditional PutItem of a
// 1 KB item and a bare TransactWriteItems of three small conditional puts.
// Interleaving puts all three under the same machine load. Each op does one
// of each; the metrics are the p50 and p99 of each kind.
func BenchmarkDynamoCommitLatency(b *testing.B) {
	ctx := context.Background()
	db := newDynBench(b)
	ddb := db.clients.DynamoDB
	val := strings.Repeat("v", 1000)
	item := func(pk, sk, v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}, "v": &types.AttributeValueMemberS{Value: v}}
	}
	cond := aws.String("attribute_not_exists(pk)")
	put := func(i int) {
		pk := fmt.Sprintf("bench#p%d-%d", i, time.Now().UnixNano())
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.cfg.Table), Item: item(pk, "a", val[:1000-len(pk)-6]), ConditionExpression: cond}); err != nil {
			b.Fatal(err)
		}
	}
	tx3 := func(i int) {
		pk := fmt.Sprintf("bench#t%d-%d", i, time.Now().UnixNano())
		tis := make([]types.TransactWriteItem, 3)
		for j := range tis {
			tis[j] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(db.cfg.Table), Item: item(pk, fmt.Sprint("s", j), val[:200]), ConditionExpression: cond}}
		}
		if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tis}); err != nil {
			b.Fatal(err)
		}
	}
	run := dynRun(b, db.w)
	prev := ""
	step := func(k int) {
		next := dynIDs.New(world.PrefixStep)
		dynAppend(b, db.w, run, serialStep(prev, next, k)...)
		prev = next
	}
	for i := range 50 { // warm up
		put(-i - 1)
		tx3(-i - 1)
		step(i)
	}
	var latStep, latPut, latTx []time.Duration
	timed := func(lat *[]time.Duration, f func(int), i int) {
		t0 := time.Now()
		f(i)
		*lat = append(*lat, time.Since(t0))
	}
	b.ResetTimer()
	for i := range b.N {
		timed(&latStep, step, i)
		timed(&latPut, put, i)
		timed(&latTx, tx3, i)
	}
	b.StopTimer()
	b.ReportMetric(percentile(latStep, 50), "step-p50-ms")
	b.ReportMetric(percentile(latStep, 99), "step-p99-ms")
	b.ReportMetric(percentile(latPut, 50), "put1KB-p50-ms")
	b.ReportMetric(percentile(latPut, 99), "put1KB-p99-ms")
	b.ReportMetric(percentile(latTx, 50), "tx3-p50-ms")
	b.ReportMetric(percentile(latTx, 99), "tx3-p99-ms")
}

// BenchmarkDynamoQueue: per message, enqueued (with or without an
// idempotency key), received in batches of up to 10 and acked.
func BenchmarkDynamoQueue(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run("keyed="+strconv.FormatBool(keyed), func(b *testing.B) {
			db := newDynBench(b)
			ctx := context.Background()
			run := dynIDs.New(world.PrefixRun)
			body, _ := world.EncodeMessage(world.Message{RunID: run})
			db.reset()
			b.ResetTimer()
			for i := range b.N {
				p := &world.EnqueueParams{Body: body}
				if keyed {
					p.IdempotencyKey = fmt.Sprint("k-", i, "-", run)
				}
				if _, err := db.w.Enqueue(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			for got := 0; got < b.N; {
				ds, err := db.w.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: time.Second, Visibility: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range ds {
					if err := db.w.Ack(ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
						b.Fatal(err)
					}
				}
				got += len(ds)
			}
			b.StopTimer()
			per := func(k string) float64 { return float64(db.m.Count(k)) / float64(b.N) }
			b.ReportMetric(per("SQS"), "sqs-req/msg")
			b.ReportMetric(per("SQS/SendMessage"), "send/msg")
			b.ReportMetric(per("SQS/ReceiveMessage"), "receive/msg")
			b.ReportMetric(per("SQS/DeleteMessage"), "delete/msg")
			b.ReportMetric(per("DynamoDB"), "ddb-req/msg")
			wru := db.m.Units(nil).WRU
			b.ReportMetric(per("SQS")*priceSQS+wru/float64(b.N)*priceWRU, "usd/M-msg")
		})
	}
}

// BenchmarkDynamoFanoutEnqueue: the messages of a 5,000-way fan-out (320
// of them at InlineConcurrency 16, each with its idempotency key: a claim,
// a send and a confirmation), sent one at a time (the engine before) and 8
// at a time (enqueueSteps now). Per op, one fan-out's messages. Every
// request waits 5 ms more (a middleware), as a request within an AWS region
// takes about that: the emulators answer in well under a millisecond, so
// without it the figure is the machine's CPU, not the round trips.
func BenchmarkDynamoFanoutEnqueue(b *testing.B) {
	const msgs = 320
	rtt := func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("bench-rtt", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			time.Sleep(5 * time.Millisecond)
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	}
	for _, inflight := range []int{1, 8} {
		b.Run("inflight="+strconv.Itoa(inflight), func(b *testing.B) {
			db := newDynBench(b, rtt)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				run := dynIDs.New(world.PrefixRun)
				body, _ := world.EncodeMessage(world.Message{RunID: run})
				sem := make(chan struct{}, inflight)
				var wg sync.WaitGroup
				for i := range msgs {
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						if _, err := db.w.Enqueue(ctx, &world.EnqueueParams{Body: body, IdempotencyKey: fmt.Sprint("k-", i, "-", run)}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/fanout")
		})
	}
}

// BenchmarkDynamoStream: per stream chunk, writes of 1 and of 10 chunks
// from one writer, 1-chunk writes from 8 concurrent writers (coalesced),
// and reading the stream back in pages of 100.
func BenchmarkDynamoStream(b *testing.B) {
	for _, tc := range []struct {
		name            string
		writers, chunks int
	}{{"write-1", 1, 1}, {"write-10", 1, 10}, {"write-1-x8-writers", 8, 1}} {
		b.Run(tc.name, func(b *testing.B) {
			db := newDynBench(b)
			ctx := context.Background()
			run := dynIDs.New(world.PrefixRun)
			chunk := []byte(strings.Repeat("t", 64))
			db.reset()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range tc.writers {
				wg.Go(func() {
					for range b.N {
						cs := make([][]byte, tc.chunks)
						for j := range cs {
							cs[j] = chunk
						}
						if err := db.w.WriteStream(ctx, &world.WriteStreamParams{RunID: run, Name: "out", Chunks: cs}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			chunks := float64(b.N * tc.writers * tc.chunks)
			puts := float64(db.m.Count("S3/PutObject") + db.m.Count("S3/ListObjectsV2"))
			gets := float64(db.m.Count("S3/GetObject") + db.m.Count("S3/HeadObject"))
			b.ReportMetric(float64(db.m.Count("S3"))/chunks, "s3-req/chunk")
			b.ReportMetric(float64(db.m.Count("S3/PutObject"))/chunks, "put/chunk")
			b.ReportMetric((puts*priceS3Put+gets*priceS3Get)/chunks, "usd/M-chunk")
			db.reset()
			next, read := int64(0), 0
			for {
				p, err := db.w.ReadStream(ctx, &world.ReadStreamParams{RunID: run, Name: "out", Start: next, Limit: 100})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Chunks) == 0 {
					break
				}
				read += len(p.Chunks)
				next = p.Next
			}
			b.ReportMetric(float64(db.m.Count("S3"))/float64(max(read, 1)), "read-s3-req/chunk")
		})
	}
}
