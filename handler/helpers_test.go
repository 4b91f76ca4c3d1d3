package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// syncBuffer collects log lines from concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log records written so far.
func (s *syncBuffer) lines(t testing.TB) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(s.b.Bytes(), []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line is not JSON: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// testBundle is a local world, a registry over the test workflows, a client
// and the flow handler under test.
type testBundle struct {
	w      *localworld.World
	world  world.World // what the handler sees (w, or a wrapper)
	reg    *workflow.Registry
	client *client.Client
	fn     handler.SQSHandler
	logs   *syncBuffer
	cfg    handler.Config
	opts   []knobs.Option // cfg's knobs
}

type setupOptions struct {
	wrap   func(world.World) world.World
	config func(*handler.Config)
	knobs  []knobs.Option // after setup's own
}

func setup(t *testing.T, o setupOptions) *testBundle {
	t.Helper()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	reg := workflow.NewRegistry()
	if err := reg.Register(allDefs...); err != nil {
		t.Fatal(err)
	}
	b := &testBundle{w: w, world: w, reg: reg, logs: &syncBuffer{}}
	if o.wrap != nil {
		b.world = o.wrap(w)
	}
	b.client, err = client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	b.cfg = handler.Config{Worker: worker.Config{
		World: b.world, Registry: reg, Logger: lambdaio.NewJSONLogger(b.logs, slogDebug),
		Engine: worker.EngineOptions{InlineConcurrency: 4},
	}}
	if o.config != nil {
		o.config(&b.cfg)
	}
	opts := append([]knobs.Option{knobs.WithEventPollInterval(20 * time.Millisecond), knobs.WithRunPollInterval(20 * time.Millisecond)}, o.knobs...)
	b.opts = opts
	b.fn, err = handler.NewSQS(b.cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lambdaCtx is a context as the Lambda runtime builds it: a request ID and
// a deadline.
func lambdaCtx(t *testing.T, requestID string, timeout time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID: requestID, InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:flow",
	})
	return context.WithTimeout(ctx, timeout)
}

// sqsRecord builds a record as the event source mapping does.
func sqsRecord(id, body string, receiveCount int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs", AWSRegion: "us-east-1",
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:work",
		Attributes: map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(receiveCount), "SentTimestamp": "1700000000000",
			"SenderId": "AIDA", "ApproximateFirstReceiveTimestamp": "1700000000001",
		},
	}
}

// invoke runs the handler on ev through aws-lambda-go's JSON path, as the
// runtime does, and returns the decoded response.
func invoke(t *testing.T, ctx context.Context, fn handler.SQSHandler, ev events.SQSEvent) events.SQSEventResponse {
	t.Helper()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(fn).Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("the handler failed the batch: %v", err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// batch receives up to max messages of the local queue (waiting up to wait
// for the first) and hands them to the handler as one SQS event, then
// settles them as the event source mapping does: the failed ones are
// released, the others acknowledged. It returns the response and the
// deliveries (nil when the queue stayed empty).
func (b *testBundle) batch(t *testing.T, ctx context.Context, max int, wait time.Duration) (events.SQSEventResponse, []world.Delivery) {
	t.Helper()
	ds, err := b.w.Receive(context.Background(), &world.ReceiveParams{Max: max, Wait: wait, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		return events.SQSEventResponse{}, nil
	}
	ev := events.SQSEvent{}
	byID := map[string]world.Delivery{}
	for _, d := range ds {
		rec := sqsRecord(d.MessageID, string(d.Body), d.Attempt)
		rec.ReceiptHandle = d.Receipt
		ev.Records = append(ev.Records, rec)
		byID[d.MessageID] = d
	}
	resp := invoke(t, ctx, b.fn, ev)
	failed := map[string]bool{}
	for _, id := range failedIDs(resp) {
		if _, ok := byID[id]; !ok {
			t.Fatalf("batchItemFailures names %q, not in the batch", id)
		}
		failed[id] = true
	}
	for id, d := range byID {
		if failed[id] {
			_ = b.w.Release(context.Background(), &world.ReleaseParams{Receipt: d.Receipt})
			continue
		}
		if err := b.w.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt}); err != nil {
			t.Fatal(err)
		}
	}
	return resp, ds
}

// drive runs batches until the run ends, and returns the number of
// invocations and of messages handled.
func (b *testBundle) drive(t *testing.T, runID string, max int) (invocations, messages int) {
	t.Helper()
	limit := time.Now().Add(2 * time.Minute) // a bound against a hang, not a timing judgement
	for time.Now().Before(limit) {
		st, err := statusOfID(context.Background(), b.client, runID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Terminal() {
			return invocations, messages
		}
		ctx, cancel := lambdaCtx(t, fmt.Sprintf("req-%d", invocations+1), 30*time.Second)
		_, ds := b.batch(t, ctx, max, 200*time.Millisecond)
		cancel()
		if len(ds) > 0 {
			invocations++
			messages += len(ds)
		}
	}
	t.Fatalf("run %s did not end in time", runID)
	return
}

// eventsOf returns a run's log.
func eventsOf(t *testing.T, w world.World, runID string) []world.Event {
	t.Helper()
	var out []world.Event
	cursor := ""
	for {
		p, err := w.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out
		}
		cursor = p.Cursor
	}
}

// countEvents counts a run's events of type typ per correlation ID.
func countEvents(t *testing.T, w world.World, runID string, typ world.EventType) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, ev := range eventsOf(t, w, runID) {
		if ev.Type() == typ {
			n[ev.CorrelationID]++
		}
	}
	return n
}

// queued returns the bodies of the messages waiting in the local queue
// (delayed ones included), putting them back.
func (b *testBundle) queued(t *testing.T) []world.Message {
	t.Helper()
	ds, err := b.w.Receive(context.Background(), &world.ReceiveParams{Max: 100, Wait: 10 * time.Millisecond, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out []world.Message
	for _, d := range ds {
		m, err := world.DecodeMessage(d.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		if err := b.w.Release(context.Background(), &world.ReleaseParams{Receipt: d.Receipt}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func messageBody(t testing.TB, m world.Message) string {
	t.Helper()
	b, err := world.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failingWorld fails the run lease of the runs in fail with a transient
// error, as a throttled DynamoDB would.
type failingWorld struct {
	world.World
	mu   sync.Mutex
	fail map[string]bool
}

var errThrottled = errors.New("ProvisionedThroughputExceededException: throttled (injected)")

func (f *failingWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	f.mu.Lock()
	fail := f.fail[p.RunID]
	f.mu.Unlock()
	if fail {
		return nil, errThrottled
	}
	return f.World.AcquireRunLease(ctx, p)
}

// fakeQueue records the releases the handler asks for.
type fakeQueue struct {
	mu       sync.Mutex
	released map[string]time.Duration // the last delay asked, by receipt
	times    map[string]int           // how many releases, by receipt
}

func (q *fakeQueue) Receive(context.Context, *world.ReceiveParams) ([]world.Delivery, error) {
	return nil, errors.New("not implemented")
}
func (q *fakeQueue) Ack(context.Context, *world.AckParams) error {
	return errors.New("not implemented")
}
func (q *fakeQueue) Release(_ context.Context, p *world.ReleaseParams) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.released == nil {
		q.released, q.times = map[string]time.Duration{}, map[string]int{}
	}
	q.released[p.Receipt] = p.Delay
	q.times[p.Receipt]++
	return nil
}

// count is how many times the handler released receipt.
func (q *fakeQueue) count(receipt string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.times[receipt]
}

func (q *fakeQueue) releases() map[string]time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]time.Duration{}
	for k, v := range q.released {
		out[k] = v
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
