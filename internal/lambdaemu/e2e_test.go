package lambdaemu

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// requireEmulators skips the test unless SKEIN_EMULATORS=1 (set by `localstack/emulators.sh env`);
// with SKEIN_REQUIRE_EMULATORS=1 it fails instead.
func requireEmulators(t *testing.T) {
	t.Helper()
	if os.Getenv("SKEIN_EMULATORS") == "1" {
		return
	}
	msg := `needs the offline emulators: bash localstack/emulators.sh start && eval "$(bash localstack/emulators.sh env)"`
	if os.Getenv("SKEIN_REQUIRE_EMULATORS") == "1" {
		t.Fatal("SKEIN_REQUIRE_EMULATORS=1 but SKEIN_EMULATORS is not set; " + msg)
	}
	t.Skip(msg)
}

// e2eSetup reads the mapping from template.yaml, provisions its queue and DLQ in ElasticMQ under a
// unique name, and returns an SQS client.
func e2eSetup(t *testing.T, adjust func(*Mapping)) (*sqs.Client, *Mapping, *Queues) {
	t.Helper()
	requireEmulators(t)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx) // AWS_ENDPOINT_URL_SQS points at ElasticMQ
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	m, err := ReadMapping(repoTemplate, &MappingOptions{ResolveOptions: ResolveOptions{Resources: testResources()}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Queue.Redrive == nil {
		t.Fatal("the template's queue has no redrive policy")
	}
	// Short timings so that redeliveries happen within seconds. This breaks AWS's rule (visibility >=
	// 6 x timeout) on purpose; the echo bootstrap answers in milliseconds unless told to sleep.
	m.Queue.VisibilityTimeout = time.Second
	m.Function.Timeout = 3 * time.Second
	m.MaximumConcurrency = 2
	if adjust != nil {
		adjust(m)
	}
	name := fmt.Sprintf("lambdaemu-%s-%d", t.Name(), time.Now().UnixNano())
	if len(name) > 70 {
		name = name[len(name)-70:]
	}
	qs, err := ProvisionQueues(ctx, client, name, m.Queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{qs.URL, qs.DeadLetterURL} {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	return client, m, qs
}

type batchLog struct {
	mu      sync.Mutex
	reports []BatchReport
}

func (l *batchLog) add(r BatchReport) {
	l.mu.Lock()
	l.reports = append(l.reports, r)
	l.mu.Unlock()
}

func (l *batchLog) all() []BatchReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reports)
}

func startESM(t *testing.T, client *sqs.Client, m *Mapping, qs *Queues, log *batchLog) *ESM {
	t.Helper()
	fc := m.FunctionConfig(buildEcho(t))
	fc.Stderr = newLineWriter(t, "bootstrap: ")
	fc.PassEnv = AWSPassEnv()
	esm, err := NewESM(ESMConfig{
		Mapping: m, SQS: client, QueueURL: qs.URL, Function: fc, PollWait: time.Second, OnBatch: log.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { esm.Stop() })
	return esm
}

func send(t *testing.T, client *sqs.Client, url string, bodies ...string) map[string]string {
	t.Helper()
	ids := map[string]string{} // message ID -> body
	for _, b := range bodies {
		out, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)})
		if err != nil {
			t.Fatal(err)
		}
		ids[aws.ToString(out.MessageId)] = b
	}
	return ids
}

func dlqBodies(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for range 5 {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
		if d, err := ReadQueueDepth(context.Background(), client, url); err == nil && d.Visible == 0 {
			break
		}
	}
	slices.Sort(bodies)
	return bodies
}

// TestEndToEndPartialBatchAndDLQ: messages go through ElasticMQ, the ESM and the real echo
// bootstrap. The one the function reports in batchItemFailures comes back after each visibility
// timeout and lands in the DLQ after maxReceiveCount (from template.yaml) receives; the others are
// deleted once.
func TestEndToEndPartialBatchAndDLQ(t *testing.T) {
	t.Parallel()
	client, m, qs := e2eSetup(t, nil)
	maxReceives := m.Queue.Redrive.MaxReceiveCount
	ids := send(t, client, qs.URL, "ok-1", "ok-2", "fail", "ok-3", "ok-4")
	log := &batchLog{}
	start := time.Now()
	esm := startESM(t, client, m, qs, log)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := esm.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := esm.Stop(); err != nil {
		t.Fatal(err)
	}

	if got := dlqBodies(t, client, qs.DeadLetterURL); !slices.Equal(got, []string{"fail"}) {
		t.Fatalf("DLQ holds %v, want [fail]", got)
	}
	deletes := map[string]int{}
	invocationsOf := map[string]int{}
	for _, r := range log.all() {
		if r.Response == nil || r.Response.Err != nil {
			t.Errorf("batch failed as a whole: %+v %v", r.Response, r.InvokeErr)
		}
		for _, rec := range r.Event.Records {
			invocationsOf[rec.Body]++
			if rec.EventSource != "aws:sqs" || rec.EventSourceARN != qs.ARN || rec.AWSRegion == "" ||
				rec.Attributes["ApproximateReceiveCount"] == "" || rec.Attributes["SentTimestamp"] == "" || rec.Md5OfBody == "" {
				t.Errorf("record %+v", rec)
			}
		}
		for _, id := range r.Deleted {
			deletes[ids[id]]++
		}
	}
	for _, b := range []string{"ok-1", "ok-2", "ok-3", "ok-4"} {
		if deletes[b] != 1 || invocationsOf[b] != 1 {
			t.Errorf("%s: invoked %d times, deleted %d times; want 1 and 1", b, invocationsOf[b], deletes[b])
		}
	}
	if deletes["fail"] != 0 || invocationsOf["fail"] != maxReceives {
		t.Errorf("fail: invoked %d times (want maxReceiveCount %d), deleted %d times", invocationsOf["fail"], maxReceives, deletes["fail"])
	}
	st := esm.Stats()
	if st.ColdStarts < 1 || st.ColdStarts > m.MaximumConcurrency || st.FunctionErrors != 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("drained in %s: %d batches, %d cold starts, %d messages deleted, maxReceiveCount %d",
		took.Round(time.Millisecond), st.Batches, st.ColdStarts, st.Deleted, maxReceives)
}

// TestEndToEndTimeoutRedeliversAndDeadLetters: an invocation that outlives the function timeout is
// killed, deletes nothing, and its message is redelivered after the visibility timeout into a fresh
// (cold) process, until the DLQ takes it. A message in another batch is unaffected.
func TestEndToEndTimeoutRedeliversAndDeadLetters(t *testing.T) {
	t.Parallel()
	client, m, qs := e2eSetup(t, func(m *Mapping) {
		m.BatchSize = 1
		m.Function.Timeout = time.Second
		m.Queue.Redrive.MaxReceiveCount = 2
	})
	send(t, client, qs.URL, "sleep 30s", "ok")
	log := &batchLog{}
	esm := startESM(t, client, m, qs, log)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := esm.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := esm.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := dlqBodies(t, client, qs.DeadLetterURL); !slices.Equal(got, []string{"sleep 30s"}) {
		t.Fatalf("DLQ holds %v", got)
	}
	timeouts, oks := 0, 0
	for _, r := range log.all() {
		body := r.Event.Records[0].Body
		switch {
		case body == "sleep 30s" && r.Response != nil && r.Response.Err != nil && r.Response.Err.Type == "Sandbox.Timedout":
			timeouts++
			if len(r.Deleted) != 0 {
				t.Error("a timed-out batch deleted messages")
			}
		case body == "ok" && r.Response != nil && r.Response.Err == nil && len(r.Deleted) == 1:
			oks++
		default:
			t.Errorf("unexpected batch: %s %+v", body, r.Response)
		}
	}
	if timeouts != 2 || oks != 1 {
		t.Errorf("%d timeouts (want 2 = maxReceiveCount), %d successes (want 1)", timeouts, oks)
	}
	if st := esm.Stats(); st.FunctionErrors != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestEndToEndKillMidInvokeRedelivers: the bootstrap is killed mid-invocation; the message comes back
// after the visibility timeout, runs again in a new process, and is deleted.
func TestEndToEndKillMidInvokeRedelivers(t *testing.T) {
	t.Parallel()
	client, m, qs := e2eSetup(t, func(m *Mapping) {
		m.BatchSize = 1
		m.MaximumConcurrency = 1
		m.Function.Timeout = 10 * time.Second
		// Longer than the retry's sleep, or the message would come back while the retry still runs.
		m.Queue.VisibilityTimeout = 3 * time.Second
	})
	send(t, client, qs.URL, "sleep 500ms")
	log := &batchLog{}
	esm := startESM(t, client, m, qs, log)
	deadline := time.Now().Add(20 * time.Second)
	for esm.Kill() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no invocation to kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := esm.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := esm.Stop(); err != nil {
		t.Fatal(err)
	}
	reports := log.all()
	if len(reports) != 2 {
		t.Fatalf("%d batches, want 2 (killed, then redelivered)", len(reports))
	}
	first, second := reports[0], reports[1]
	if first.Response == nil || first.Response.Err == nil || first.Response.Err.Type != "Runtime.ExitError" || len(first.Deleted) != 0 {
		t.Errorf("first batch: %+v", first.Response)
	}
	if second.Response == nil || second.Response.Err != nil || len(second.Deleted) != 1 || !second.Response.Cold {
		t.Errorf("second batch: %+v deleted %v", second.Response, second.Deleted)
	}
	if rc := second.Event.Records[0].Attributes["ApproximateReceiveCount"]; rc != "2" {
		t.Errorf("redelivered ApproximateReceiveCount = %q, want 2", rc)
	}
	if d, err := ReadQueueDepth(context.Background(), client, qs.DeadLetterURL); err != nil || !d.Empty() {
		t.Errorf("DLQ depth %+v %v", d, err)
	}
}
