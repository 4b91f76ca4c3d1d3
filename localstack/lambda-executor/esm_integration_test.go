//go:build integration

package lambdaexecutor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/world"
)

const (
	esmTimeout    = 6 // the function's timeout and the queue's visibility timeout, seconds
	esmMaxReceive = 2 // the redrive policy's maxReceiveCount
	esmGood       = 100
	esmPoison     = 3
)

// TestSQSMapping: LocalStack's own SQS event source mapping (batch size 10,
// a 1 s batching window, ReportBatchItemFailures) drives the project's flow
// function. 100 messages of runs that do not exist are acknowledged; 3
// malformed ones among them are reported failed, item by item, come back
// and, past maxReceiveCount, move to the dead-letter queue alone.
func TestSQSMapping(t *testing.T) {
	e := setup(t)
	_, fnEnv := e.resources(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	queueURL, queueARN, dlqURL := e.queueWithDLQ(t, ctx)

	name := "skein-esm-" + strings.ToLower(names.New(""))
	e.lambda.createFunction(t, functionSpec{Name: name, Zip: e.flowZip, Arch: e.flowArch, Timeout: esmTimeout, MemoryMB: 512, Env: fnEnv})
	if r := e.lambda.invoke(t, name, []byte(`{"Records":[]}`)); r.FunctionError != "" { // warm it: init is not what is measured
		t.Fatalf("warm-up: %s", r.Payload)
	}
	e.lambda.mapQueue(t, queueARN, name, 10, 1)

	var good []string
	for range esmGood {
		b, err := world.EncodeMessage(world.Message{RunID: names.New(world.PrefixRun)})
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, string(b))
	}
	took := e.throughMapping(t, ctx, queueURL, dlqURL, good)
	t.Logf("through the mapping (%s): %d messages in %v (%.0f/s); the poison dead-lettered after %v",
		e.flowArch, esmGood, took[0].Round(time.Millisecond), esmGood/took[0].Seconds(), took[1].Round(time.Millisecond))
}

// TestSQSMappingBatches: the same mapping drives testdata/probe, a function
// that reports each batch's size: every batch holds 1 to 10 records, the
// batching window gathers more than one, and only the poison is
// dead-lettered. Its figure is the mapping's and the executor's alone.
func TestSQSMappingBatches(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	queueURL, queueARN, dlqURL := e.queueWithDLQ(t, ctx)
	probeURL, _ := e.queue(t, ctx, "skein-probe-"+strings.ToLower(names.New("")), nil)

	name := "skein-probe-" + strings.ToLower(names.New(""))
	e.lambda.createFunction(t, functionSpec{Name: name, Zip: e.probe, Arch: lambdaArch(runtime.GOARCH), Timeout: esmTimeout,
		MemoryMB: 128, Env: map[string]string{"PROBE_QUEUE_URL": probeURL}})
	if r := e.lambda.invoke(t, name, []byte(`{"sleepMs":0}`)); r.FunctionError != "" {
		t.Fatalf("warm-up: %s", r.Payload)
	}
	e.lambda.mapQueue(t, queueARN, name, 10, 1)
	var good []string
	for i := range esmGood {
		good = append(good, fmt.Sprintf("good %d", i))
	}
	took := e.throughMapping(t, ctx, queueURL, dlqURL, good)
	t.Logf("through the mapping (probe, %s): %d messages in %v (%.0f/s); the poison dead-lettered after %v",
		lambdaArch(runtime.GOARCH), esmGood, took[0].Round(time.Millisecond), esmGood/took[0].Seconds(), took[1].Round(time.Millisecond))

	var sizes []int
	sum := 0
	for {
		out, err := e.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &probeURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			n, err := strconv.Atoi(aws.ToString(m.Body))
			if err != nil {
				t.Fatalf("probe message %q: %v", aws.ToString(m.Body), err)
			}
			sizes = append(sizes, n)
			sum += n
			if _, err := e.clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &probeURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each good record once; each poison record esmMaxReceive times (then the redrive moves it).
	if want := esmGood + esmPoison*esmMaxReceive; sum < esmGood+esmPoison || sum > want {
		t.Errorf("the batches held %d records in all, want %d to %d: %v", sum, esmGood+esmPoison, want, sizes)
	}
	if len(sizes) == 0 || slices.Min(sizes) < 1 || slices.Max(sizes) > 10 || slices.Max(sizes) < 2 {
		t.Errorf("batch sizes %v: want 1 to 10 records each, some batch more than one", sizes)
	}
	t.Logf("%d batches, sizes %v", len(sizes), sizes)
}

// throughMapping sends good with esmPoison malformed messages among them to
// the mapped queue, waits until the good ones are handled (only the poison
// is left) and the poison reached the DLQ, and checks the DLQ holds exactly
// the poison. It returns both times, from the first send.
func (e *env) throughMapping(t *testing.T, ctx context.Context, queueURL, dlqURL string, good []string) [2]time.Duration {
	t.Helper()
	bodies := slices.Clone(good)
	var poison []string
	for i := range esmPoison {
		p := fmt.Sprintf("poison %d: not a skein message", i)
		poison = append(poison, p)
		bodies = slices.Insert(bodies, (i+1)*len(good)/(esmPoison+1), p)
	}
	start := time.Now()
	for chunk := range slices.Chunk(bodies, 10) {
		in := &sqs.SendMessageBatchInput{QueueUrl: &queueURL}
		for i, b := range chunk {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)})
		}
		out, err := e.clients.SQS.SendMessageBatch(ctx, in)
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("SendMessageBatch: %v %+v", err, out)
		}
	}
	var took [2]time.Duration
	// The good messages leave the queue (only the poison remains in it) ...
	waitFor(t, ctx, "the good messages to be handled", func() bool { return e.queued(t, ctx, queueURL) <= esmPoison })
	took[0] = time.Since(start)
	// ... and the poison moves to the DLQ once received maxReceiveCount times.
	waitFor(t, ctx, "the poison to reach the DLQ", func() bool { return e.queued(t, ctx, queueURL) == 0 })
	took[1] = time.Since(start)

	var dead []string
	for len(dead) < esmPoison {
		out, err := e.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &dlqURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
		}
	}
	slices.Sort(dead)
	if !slices.Equal(dead, poison) {
		t.Fatalf("DLQ holds %d messages %q, want exactly the %d poison messages: a good message failed with its batch", len(dead), dead, esmPoison)
	}
	return took
}

// queueWithDLQ creates a queue whose redrive policy moves a message to a
// dead-letter queue past esmMaxReceive receives.
func (e *env) queueWithDLQ(t *testing.T, ctx context.Context) (url, arn, dlqURL string) {
	t.Helper()
	base := "skein-esm-" + strings.ToLower(names.New(""))
	dlqURL, dlqARN := e.queue(t, ctx, base+"-dlq", nil)
	policy, err := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(esmMaxReceive)})
	if err != nil {
		t.Fatal(err)
	}
	url, arn = e.queue(t, ctx, base, map[string]string{"RedrivePolicy": string(policy), "VisibilityTimeout": strconv.Itoa(esmTimeout)})
	return url, arn, dlqURL
}

func (e *env) queue(t *testing.T, ctx context.Context, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	q, err := e.clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	url = aws.ToString(q.QueueUrl)
	t.Cleanup(func() {
		if _, err := e.clients.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &url}); err != nil {
			t.Logf("DeleteQueue %s: %v", name, err)
		}
	})
	a, err := e.clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	return url, a.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// queued is the number of messages in the queue, visible or in flight.
func (e *env) queued(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	a, err := e.clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range a.Attributes {
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("queue attribute %q: %v", v, err)
		}
		n += c
	}
	return n
}

func waitFor(t *testing.T, ctx context.Context, what string, done func() bool) {
	t.Helper()
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
