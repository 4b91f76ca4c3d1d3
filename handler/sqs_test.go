package handler_test

import (
	"context"
	"encoding/base64"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestSQSSerialRunInOneInvocation: 20 serial steps complete in one
// invocation of one message, through aws-lambda-go's JSON path; the logs
// are JSON with the request ID and the run ID.
func TestSQSSerialRunInOneInvocation(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	ctx := context.Background()
	run, err := serial.Start(ctx, b.client, 20)
	if err != nil {
		t.Fatal(err)
	}
	invocations, messages := b.drive(t, run.ID(), 10)
	if invocations != 1 || messages != 1 {
		t.Errorf("%d invocations, %d messages; want 1 and 1", invocations, messages)
	}
	out, err := run.Result(ctx)
	if err != nil || out != 20 {
		t.Fatalf("result %d, %v", out, err)
	}
	for step, n := range countEvents(t, b.w, run.ID(), world.EventStepCompleted) {
		if n != 1 {
			t.Errorf("step %s completed %d times", step, n)
		}
	}
	var withRun int
	for _, l := range b.logs.lines(t) {
		if l["requestId"] != "req-1" {
			t.Errorf("log record without the request ID: %v", l)
		}
		if _, ok := l["timestamp"]; !ok {
			t.Errorf("log record without timestamp: %v", l)
		}
		if l["runId"] == run.ID() {
			withRun++
		}
	}
	if withRun == 0 {
		t.Error("no log record names the run")
	}
}

// TestSQSFanOutConverges: a fan-out wider than InlineConcurrency queues the
// excess as messages with a step ID, handled concurrently in later batches;
// the run converges with one step_completed per step.
func TestSQSFanOutConverges(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	ctx := context.Background()
	run, err := fanOut.Start(ctx, b.client, 12) // InlineConcurrency is 4
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, run.ID(), 10)
	out, err := run.Result(ctx)
	if err != nil || out != 506 { // sum of squares 0..11
		t.Fatalf("result %d, %v", out, err)
	}
	done := countEvents(t, b.w, run.ID(), world.EventStepCompleted)
	if len(done) != 12 {
		t.Errorf("%d steps completed, want 12", len(done))
	}
	for step, n := range done {
		if n != 1 {
			t.Errorf("step %s completed %d times", step, n)
		}
	}
	sawStepID := false
	for _, l := range b.logs.lines(t) {
		if l["stepId"] != nil {
			sawStepID = true
		}
	}
	if !sawStepID {
		t.Error("no background step message was logged with its stepId")
	}
}

// TestSQSBadMessages: malformed bodies are reported failed (for the DLQ)
// under DeadLetter, acknowledged past MaxMalformedReceives; a message for a
// run that does not exist, for a step that does not exist and for a
// finished run are acknowledged; none stalls the good message beside them.
func TestSQSBadMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{knobs: []knobs.Option{knobs.WithMaxMalformedReceives(3)}})
	ctx := context.Background()
	finished, err := serial.Start(ctx, b.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, finished.ID(), 10)
	good, err := serial.Start(ctx, b.client, 3) // its own message stays queued: the test sends one
	if err != nil {
		t.Fatal(err)
	}
	ids := world.NewIDSource(nil, nil)
	unknownRun := ids.New(world.PrefixRun)
	encoded := sqsRecord("base64", base64.StdEncoding.EncodeToString([]byte(messageBody(t, world.Message{RunID: good.ID()}))), 1)
	encoded.MessageAttributes = map[string]events.SQSMessageAttribute{"skein-enc": {DataType: "String", StringValue: new("base64")}}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("not-json", "hello", 1),
		sqsRecord("bad-id", `{"runId":"run-1"}`, 2),
		sqsRecord("too-often", "}{", 4),
		sqsRecord("unknown-run", messageBody(t, world.Message{RunID: unknownRun}), 1),
		sqsRecord("unknown-step", messageBody(t, world.Message{RunID: finished.ID(), StepID: ids.New(world.PrefixStep)}), 1),
		sqsRecord("finished", messageBody(t, world.Message{RunID: finished.ID()}), 1),
		encoded,
	}}
	lctx, cancel := lambdaCtx(t, "req-bad", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, ev)
	got := failedIDs(resp)
	slices.Sort(got)
	if want := []string{"bad-id", "not-json"}; !slices.Equal(got, want) {
		t.Errorf("batchItemFailures %v, want %v", got, want)
	}
	if st, err := statusOf(ctx, good); err != nil || !st.Terminal() {
		t.Errorf("the good run (sent base64-encoded) is %s (%v), want completed", st, err)
	}
	reasons := map[string]string{}
	for _, l := range b.logs.lines(t) {
		if id, ok := l["messageId"].(string); ok && l["reason"] != nil {
			reasons[id] = l["message"].(string) + ": " + l["reason"].(string)
		}
	}
	for _, id := range []string{"not-json", "bad-id", "too-often", "unknown-run", "unknown-step"} {
		if reasons[id] == "" {
			t.Errorf("no logged reason for %s", id)
		}
	}
	if !contains(reasons["too-often"], "after too many receives") {
		t.Errorf("too-often: %q", reasons["too-often"])
	}
	if !contains(reasons["unknown-run"], "not found") {
		t.Errorf("unknown-run: %q", reasons["unknown-run"])
	}
}

// TestSQSMalformedAcknowledge: under the Acknowledge policy a malformed
// body is deleted at once.
func TestSQSMalformedAcknowledge(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{config: func(c *handler.Config) { c.Malformed = handler.Acknowledge }})
	lctx, cancel := lambdaCtx(t, "req-ack", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, events.SQSEvent{Records: []events.SQSMessage{sqsRecord("m1", "garbage", 1)}})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batchItemFailures %v, want none", failedIDs(resp))
	}
}

// TestSQSRetryableFailure: a transient failure of one run reports only its
// message; the other run of the batch completes; with Config.Queue and
// RetryDelay the failed message is hidden for RetryDelay(attempt), attempt
// counting the deliveries of the messages it replaces
// (world.Message.Delivered).
func TestSQSRetryableFailure(t *testing.T) {
	t.Parallel()
	fw := &failingWorld{fail: map[string]bool{}}
	q := &fakeQueue{}
	b := setup(t, setupOptions{
		wrap:   func(w world.World) world.World { fw.World = w; return fw },
		config: func(c *handler.Config) { c.Queue = q },
		knobs:  []knobs.Option{knobs.WithRetryDelay(func(attempt int) time.Duration { return time.Duration(attempt) * time.Second })},
	})
	ctx := context.Background()
	sick, err := serial.Start(ctx, b.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	well, err := serial.Start(ctx, b.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	fw.mu.Lock()
	fw.fail[sick.ID()] = true
	fw.mu.Unlock()
	ev := events.SQSEvent{Records: []events.SQSMessage{
		// Received twice, after 4 deliveries of the messages it replaces.
		sqsRecord("sick", messageBody(t, world.Message{RunID: sick.ID(), Delivered: 4}), 2),
		sqsRecord("well", messageBody(t, world.Message{RunID: well.ID()}), 1),
	}}
	lctx, cancel := lambdaCtx(t, "req-retry", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, ev)
	if got := failedIDs(resp); !slices.Equal(got, []string{"sick"}) {
		t.Errorf("batchItemFailures %v, want [sick]", got)
	}
	if st, _ := statusOf(ctx, well); !st.Terminal() {
		t.Errorf("the healthy run is %s", st)
	}
	if got := q.releases(); len(got) != 1 || got["rh-sick"] != 6*time.Second {
		t.Errorf("releases %v, want rh-sick for 6s (RetryDelay of its 6th delivery)", got)
	}
}

// waitLeaseFree waits until no invocation holds run's lease.
func waitLeaseFree(t *testing.T, w world.World, run string, timeout time.Duration) {
	t.Helper()
	probe := &world.RunLeaseParams{RunID: run, Owner: "test-probe", TTL: time.Second}
	for limit := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		_, err := w.AcquireRunLease(context.Background(), probe)
		if err == nil {
			_ = w.ReleaseRunLease(context.Background(), probe)
			return
		}
		if !errors.Is(err, world.ErrLeaseHeld) || time.Now().After(limit) {
			t.Fatalf("run %s's lease: %v", run, err)
		}
	}
}

// meeting is where the steps of TestSQSRecordsRunConcurrently meet: each
// waits until all have arrived, or a minute (a bound against a hang, not a
// timing judgement).
type meeting struct {
	mu      sync.Mutex
	want, n int
	all     chan struct{}
}

var meetings sync.Map // the test's name -> *meeting

// meet reports whether all the meeting's steps were running at once.
var meet = workflow.NewStep("handler-meet", func(_ context.Context, key string) (bool, error) {
	v, _ := meetings.Load(key)
	m := v.(*meeting)
	m.mu.Lock()
	if m.n++; m.n == m.want {
		close(m.all)
	}
	m.mu.Unlock()
	select {
	case <-m.all:
		return true, nil
	case <-time.After(time.Minute):
		return false, nil
	}
})

var meeter = workflow.New("handler-meeter", func(ctx workflow.Context, key string) (bool, error) {
	return meet.Call(ctx, key)
})

// TestSQSRecordsRunConcurrently: the records of different runs in one batch
// run at once: the steps of four runs each wait until all four have
// started, which one after the other they never would (each would give up
// after a minute).
func TestSQSRecordsRunConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(meet, meeter)
	}})
	meetings.Store(t.Name(), &meeting{want: 4, all: make(chan struct{})})
	t.Cleanup(func() { meetings.Delete(t.Name()) })
	ctx := context.Background()
	var ev events.SQSEvent
	var runs []*client.Run[bool]
	for i := range 4 {
		run, err := meeter.Start(ctx, b.client, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
		ev.Records = append(ev.Records, sqsRecord(string(rune('a'+i)), messageBody(t, world.Message{RunID: run.ID()}), 1))
	}
	lctx, cancel := lambdaCtx(t, "req-conc", 3*time.Minute)
	defer cancel()
	resp := invoke(t, lctx, b.fn, ev)
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", failedIDs(resp))
	}
	for _, run := range runs {
		if met, err := run.Result(ctx); err != nil || !met {
			t.Errorf("run %s: met %v, %v: the records did not run at once", run.ID(), met, err)
		}
	}
}

// TestSQSEmptyBatch answers an empty event with no failures.
func TestSQSEmptyBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	lctx, cancel := lambdaCtx(t, "req-empty", time.Second)
	defer cancel()
	if resp := invoke(t, lctx, b.fn, events.SQSEvent{}); len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", failedIDs(resp))
	}
}
