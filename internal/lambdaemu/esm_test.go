package lambdaemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS is an in-memory queue behind SQSAPI: received messages stay hidden until deleted (no
// redelivery), and ReceiveMessage returns at most perReceive messages per call.
type fakeSQS struct {
	mu         sync.Mutex
	pending    []types.Message
	inflight   map[string]types.Message // by receipt handle
	deleted    []string                 // message IDs, in deletion order
	receives   int
	perReceive int
}

func newFakeSQS(bodies ...string) *fakeSQS {
	q := &fakeSQS{inflight: map[string]types.Message{}, perReceive: 10}
	for i, b := range bodies {
		q.add(fmt.Sprintf("m%d", i+1), b)
	}
	return q
}

func (q *fakeSQS) add(id, body string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, types.Message{
		MessageId: aws.String(id),
		Body:      aws.String(body),
		MD5OfBody: aws.String("md5-" + id),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1700000000000",
			"SenderId":                         "AIDAEXAMPLE",
			"ApproximateFirstReceiveTimestamp": "1700000000001",
			"DeadLetterQueueSourceArn":         "not copied by Lambda",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("step")},
		},
		MD5OfMessageAttributes: aws.String("md5attrs-" + id),
	})
}

func (q *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.mu.Lock()
	q.receives++
	n := min(int(in.MaxNumberOfMessages), q.perReceive, len(q.pending))
	if n == 0 {
		q.mu.Unlock()
		// An empty long poll: wait a little (not the full WaitTimeSeconds) or until cancelled.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		return &sqs.ReceiveMessageOutput{}, nil
	}
	defer q.mu.Unlock()
	if !slices.Contains(in.MessageSystemAttributeNames, types.MessageSystemAttributeNameAll) ||
		!slices.Contains(in.MessageAttributeNames, "All") {
		return nil, errors.New("fake: the ESM must ask for all attributes")
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.pending[:n] {
		m.ReceiptHandle = aws.String("rh-" + aws.ToString(m.MessageId) + "-" + strconv.Itoa(q.receives))
		q.inflight[aws.ToString(m.ReceiptHandle)] = m
		out.Messages = append(out.Messages, m)
	}
	q.pending = q.pending[n:]
	return out, nil
}

func (q *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(in.Entries) > 10 {
		return nil, errors.New("fake: more than 10 entries")
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		m, ok := q.inflight[aws.ToString(e.ReceiptHandle)]
		if !ok {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
			continue
		}
		delete(q.inflight, aws.ToString(e.ReceiptHandle))
		q.deleted = append(q.deleted, aws.ToString(m.MessageId))
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (q *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"QueueArn":                              "arn:aws:sqs:us-east-1:000000000000:work",
		"ApproximateNumberOfMessages":           strconv.Itoa(len(q.pending)),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(len(q.inflight)),
		"ApproximateNumberOfMessagesDelayed":    "0",
	}}, nil
}

func (q *fakeSQS) deletedIDs() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Clone(q.deleted)
	slices.Sort(out)
	return out
}

// fakeInvoker answers every invocation with fn.
type fakeInvoker struct {
	fn     func(ctx context.Context, payload []byte) (*Response, error)
	closed atomic.Int32
}

func (f *fakeInvoker) Invoke(ctx context.Context, payload []byte) (*Response, error) {
	return f.fn(ctx, payload)
}

func (f *fakeInvoker) Close() error {
	f.closed.Add(1)
	return nil
}

func testMapping(batchSize, concurrency int, report bool) *Mapping {
	m := &Mapping{FunctionID: "Fn", QueueID: "Q", Enabled: true, BatchSize: batchSize, MaximumConcurrency: concurrency}
	if report {
		m.FunctionResponseTypes = []string{"ReportBatchItemFailures"}
	}
	return m
}

// runESM runs an ESM over q until wantBatches batches have been settled, then stops it.
func runESM(t *testing.T, q *fakeSQS, m *Mapping, inv func() (Invoker, error), wantBatches int) []BatchReport {
	t.Helper()
	var mu sync.Mutex
	var reports []BatchReport
	enough := make(chan struct{})
	esm, err := NewESM(ESMConfig{
		Mapping: m, SQS: q, QueueURL: "http://fake/000000000000/work", Region: "eu-west-1",
		NewInvoker: inv, PollWait: time.Second,
		OnBatch: func(r BatchReport) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, r)
			if len(reports) == wantBatches {
				close(enough)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-enough:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d of %d batches settled", len(reports), wantBatches)
	}
	if err := esm.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(reports)
}

// TestESMSettlesEachRule drives every rule of the package doc's "Settling a batch" through the ESM
// and a fake SQS: which messages get deleted.
func TestESMSettlesEachRule(t *testing.T) {
	t.Parallel()
	all := []string{"m1", "m2", "m3"}
	fnErr := &FunctionError{Type: "errorString", Message: "boom"}
	ok := func(payload string) func(context.Context, []byte) (*Response, error) {
		return func(context.Context, []byte) (*Response, error) {
			return &Response{RequestID: "r", Payload: []byte(payload)}, nil
		}
	}
	cases := []struct {
		name   string
		report bool
		invoke func(context.Context, []byte) (*Response, error)
		want   []string
	}{
		{"function error: delete nothing", true,
			func(context.Context, []byte) (*Response, error) { return &Response{Err: fnErr}, nil }, nil},
		{"function error without ReportBatchItemFailures: delete nothing", false,
			func(context.Context, []byte) (*Response, error) { return &Response{Err: fnErr}, nil }, nil},
		{"timeout: delete nothing", true,
			func(context.Context, []byte) (*Response, error) {
				return &Response{Err: &FunctionError{Type: "Sandbox.Timedout"}}, nil
			}, nil},
		{"crash: delete nothing", true,
			func(context.Context, []byte) (*Response, error) {
				return &Response{Err: &FunctionError{Type: "Runtime.ExitError"}}, nil
			}, nil},
		{"harness error: delete nothing", true,
			func(context.Context, []byte) (*Response, error) { return nil, errors.New("exec failed") }, nil},
		{"success without ReportBatchItemFailures: delete all", false, ok(`{"batchItemFailures":[{"itemIdentifier":"m1"}]}`), all},
		{"null response: delete all", true, ok(`null`), all},
		{"empty response: delete all", true, ok(``), all},
		{"null batchItemFailures: delete all", true, ok(`{"batchItemFailures":null}`), all},
		{"empty batchItemFailures: delete all", true, ok(`{"batchItemFailures":[]}`), all},
		{"one listed: delete the others", true, ok(`{"batchItemFailures":[{"itemIdentifier":"m2"}]}`), []string{"m1", "m3"}},
		{"all listed: delete none", true, ok(`{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"},{"itemIdentifier":"m3"}]}`), nil},
		{"identifier not in batch: whole batch failed", true, ok(`{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"x"}]}`), nil},
		{"empty identifier: whole batch failed", true, ok(`{"batchItemFailures":[{"itemIdentifier":""}]}`), nil},
		{"null identifier: whole batch failed", true, ok(`{"batchItemFailures":[{"itemIdentifier":null}]}`), nil},
		{"bad key name: whole batch failed", true, ok(`{"batchItemFailures":[{"id":"m1"}]}`), nil},
		{"invalid JSON: whole batch failed", true, ok(`{"batchItemFailures":`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := newFakeSQS("a", "b", "c")
			inv := &fakeInvoker{fn: tc.invoke}
			reports := runESM(t, q, testMapping(10, 2, tc.report), func() (Invoker, error) { return inv, nil }, 1)
			if got := q.deletedIDs(); !slices.Equal(got, tc.want) {
				t.Fatalf("deleted %v, want %v (%s)", got, tc.want, reports[0].Settlement.Reason)
			}
			if r := reports[0]; len(r.Event.Records) != 3 || !slices.Equal(sorted(r.Deleted), tc.want) || r.DeleteErr != nil {
				t.Fatalf("report: %d records, deleted %v, err %v", len(r.Event.Records), r.Deleted, r.DeleteErr)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestESMBuildsTheEventLikeLambda(t *testing.T) {
	t.Parallel()
	q := newFakeSQS("hello")
	var payload []byte
	inv := &fakeInvoker{fn: func(_ context.Context, p []byte) (*Response, error) {
		payload = p
		return &Response{Payload: []byte(`{}`)}, nil
	}}
	runESM(t, q, testMapping(10, 1, true), func() (Invoker, error) { return inv, nil }, 1)

	// The wire format: what the bootstrap unmarshals.
	var raw struct {
		Records []map[string]json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil || len(raw.Records) != 1 {
		t.Fatalf("payload %s: %v", payload, err)
	}
	for _, key := range []string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
		"attributes", "messageAttributes", "eventSource", "eventSourceARN", "awsRegion"} {
		if _, ok := raw.Records[0][key]; !ok {
			t.Errorf("record has no %q: %s", key, payload)
		}
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	r := ev.Records[0]
	if r.MessageId != "m1" || r.Body != "hello" || r.Md5OfBody != "md5-m1" || r.Md5OfMessageAttributes != "md5attrs-m1" ||
		r.ReceiptHandle == "" || r.EventSource != "aws:sqs" ||
		r.EventSourceARN != "arn:aws:sqs:us-east-1:000000000000:work" || r.AWSRegion != "eu-west-1" {
		t.Errorf("record %+v", r)
	}
	wantAttrs := map[string]string{
		"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000",
		"SenderId": "AIDAEXAMPLE", "ApproximateFirstReceiveTimestamp": "1700000000001",
	}
	if len(r.Attributes) != len(wantAttrs) {
		t.Errorf("attributes %v, want %v", r.Attributes, wantAttrs)
	}
	for k, v := range wantAttrs {
		if r.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, r.Attributes[k], v)
		}
	}
	a, ok := r.MessageAttributes["kind"]
	if !ok || aws.ToString(a.StringValue) != "step" || a.DataType != "String" || a.StringListValues == nil || a.BinaryListValues == nil {
		t.Errorf("message attributes %+v", r.MessageAttributes)
	}
}

func TestESMBatchSizeAndConcurrency(t *testing.T) {
	t.Parallel()
	var bodies []string
	for i := range 25 {
		bodies = append(bodies, fmt.Sprintf("msg-%d", i))
	}
	q := newFakeSQS(bodies...)
	var running, peak atomic.Int32
	var envs atomic.Int32
	newInv := func() (Invoker, error) {
		envs.Add(1)
		return &fakeInvoker{fn: func(_ context.Context, p []byte) (*Response, error) {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
			running.Add(-1)
			return &Response{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
		}}, nil
	}
	m := testMapping(4, 3, true)
	esm, err := NewESM(ESMConfig{Mapping: m, SQS: q, QueueURL: "http://fake/q", NewInvoker: newInv, PollWait: time.Second,
		OnBatch: func(r BatchReport) {
			if len(r.Event.Records) > 4 {
				t.Errorf("batch of %d > BatchSize 4", len(r.Event.Records))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Drain(context.Background()); err == nil {
		t.Error("Drain before Start succeeded")
	}
	if err := esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := esm.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := esm.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := len(q.deletedIDs()); got != 25 {
		t.Errorf("deleted %d of 25", got)
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak concurrency %d, want 2..3 (MaximumConcurrency 3)", p)
	}
	if e := envs.Load(); e > 3 {
		t.Errorf("%d execution environments, want at most 3", e)
	}
	st := esm.Stats()
	if st.Messages != 25 || st.Deleted != 25 || st.Batches < 7 || st.FunctionErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestESMBatchingWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		window    time.Duration
		wantFirst int
	}{
		{"no window: one receive per batch", 0, 1},
		{"window: gather up to BatchSize", 2 * time.Second, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := newFakeSQS("1", "2", "3", "4", "5")
			q.perReceive = 1
			m := testMapping(5, 1, false)
			m.MaximumBatchingWindow = tc.window
			inv := &fakeInvoker{fn: func(context.Context, []byte) (*Response, error) { return &Response{}, nil }}
			reports := runESM(t, q, m, func() (Invoker, error) { return inv, nil }, 1)
			if got := len(reports[0].Event.Records); got != tc.wantFirst {
				t.Fatalf("first batch has %d records, want %d", got, tc.wantFirst)
			}
		})
	}
}

func TestESMRecreatesTheEnvironmentAfterAHarnessError(t *testing.T) {
	t.Parallel()
	q := newFakeSQS("a", "b")
	q.perReceive = 1
	var created atomic.Int32
	first := &fakeInvoker{fn: func(context.Context, []byte) (*Response, error) { return nil, errors.New("broken") }}
	second := &fakeInvoker{fn: func(context.Context, []byte) (*Response, error) { return &Response{}, nil }}
	newInv := func() (Invoker, error) {
		if created.Add(1) == 1 {
			return first, nil
		}
		return second, nil
	}
	runESM(t, q, testMapping(1, 1, true), newInv, 2)
	if first.closed.Load() == 0 || created.Load() != 2 {
		t.Fatalf("closed %d, created %d", first.closed.Load(), created.Load())
	}
	if got := q.deletedIDs(); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("deleted %v", got)
	}
}

func TestNewESMValidates(t *testing.T) {
	t.Parallel()
	q := newFakeSQS()
	for name, cfg := range map[string]ESMConfig{
		"no mapping":   {SQS: q, QueueURL: "u", NewInvoker: func() (Invoker, error) { return nil, nil }},
		"no client":    {Mapping: testMapping(1, 1, true), QueueURL: "u", NewInvoker: func() (Invoker, error) { return nil, nil }},
		"no queue":     {Mapping: testMapping(1, 1, true), SQS: q, NewInvoker: func() (Invoker, error) { return nil, nil }},
		"no bootstrap": {Mapping: testMapping(1, 1, true), SQS: q, QueueURL: "u"},
		"batch size 0": {Mapping: testMapping(0, 1, true), SQS: q, QueueURL: "u", NewInvoker: func() (Invoker, error) { return nil, nil }},
	} {
		if _, err := NewESM(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m := testMapping(1, 1, true)
	m.Enabled = false
	esm, err := NewESM(ESMConfig{Mapping: m, SQS: q, QueueURL: "u", NewInvoker: func() (Invoker, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Start(context.Background()); err == nil {
		t.Error("a disabled mapping started")
	}
}

// TestESMKillMidInvokeWithRealBootstrap: Kill crashes the execution environment running a batch; the
// batch is a function error (Runtime.ExitError) and nothing is deleted.
func TestESMKillMidInvokeWithRealBootstrap(t *testing.T) {
	t.Parallel()
	q := newFakeSQS("sleep 20s")
	fc := FunctionConfig{Bootstrap: buildEcho(t), Name: "echo", Timeout: 30 * time.Second, Stderr: newLineWriter(t, "bootstrap: ")}
	reports := make(chan BatchReport, 1)
	esm, err := NewESM(ESMConfig{Mapping: testMapping(10, 1, true), SQS: q, QueueURL: "http://fake/q", Function: fc,
		PollWait: time.Second, OnBatch: func(r BatchReport) { reports <- r }})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer esm.Stop()
	deadline := time.Now().Add(10 * time.Second)
	killed := 0
	for killed == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		killed = esm.Kill()
	}
	if killed != 1 {
		t.Fatalf("Kill killed %d environments, want 1", killed)
	}
	select {
	case r := <-reports:
		if r.Response == nil || r.Response.Err == nil || r.Response.Err.Type != "Runtime.ExitError" || len(r.Deleted) != 0 {
			t.Fatalf("report %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the killed batch was not settled")
	}
	if got := q.deletedIDs(); len(got) != 0 {
		t.Fatalf("deleted %v", got)
	}
}
