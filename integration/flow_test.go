//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestQuickstart: the order workflow (a charge, a fan-out of labels, a
// sleep, a shipment) completes through the real bootstrap; its logs (at
// debug level) are JSON records with the request ID, and name the run.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Env: map[string]string{"AWS_LAMBDA_LOG_LEVEL": "debug"}})
	ctx := context.Background()
	run, err := demo.FulfilOrder.Start(ctx, s.client, demo.Order{ID: "42", Items: []string{"book", "pen", "mug"}, Total: 30})
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	out, err := run.Result(ctx)
	if info.Status != world.RunStatusCompleted || err != nil || out != "order 42: charged 30, label:book label:pen label:mug, shipped 42" {
		t.Fatalf("%s: %q, %v", info.Status, out, err)
	}
	s.drain(time.Minute)
	s.noFailures()
	s.exactlyOnce(run.ID(), 5)
	st := s.esm.Stats()
	t.Logf("completed in %s: %d invocations, %d messages, cold starts %v, bootstrap %.1f MB (built in %s)",
		time.Since(s.started).Round(time.Millisecond), st.Batches, st.Messages, s.coldStarts(),
		float64(bootstrapBin.size)/(1<<20), bootstrapBin.took.Round(time.Millisecond))
	// The function's logs are JSON with the request ID and the run ID.
	withRun := 0
	for _, r := range s.flowLogs.records() {
		if r["requestId"] == nil || r["requestId"] == "" {
			t.Errorf("log record without requestId: %v", r)
		}
		if r["runId"] == run.ID() {
			withRun++
		}
	}
	if withRun == 0 {
		t.Error("no log record names the run")
	}
}

// TestSerial100OneInvocation: 100 serial steps complete in one invocation
// of the function and one SQS message.
func TestSerial100OneInvocation(t *testing.T) {
	t.Parallel()
	// The subject is that serial steps run inline in one invocation, not
	// how fast: the function gets minutes, so that a loaded machine (100
	// steps took 23 s at load 25, past the tests' usual 20 s timeout's
	// budget, and the run went on in 5 invocations) cannot end the
	// invocation's budget first.
	s := newStack(t, stackOptions{Adjust: func(m *lambdaemu.Mapping) {
		m.Function.Timeout = 5 * time.Minute
		m.Queue.VisibilityTimeout = 6 * time.Minute
	}})
	ctx := context.Background()
	run, err := demo.Serial.Start(ctx, s.client, 100)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), 5*time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 100 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	took := info.CompletedAt.Sub(info.CreatedAt)
	s.drain(time.Minute)
	s.noFailures()
	s.exactlyOnce(run.ID(), 100)
	if st := s.esm.Stats(); st.Batches != 1 || st.Messages != 1 {
		t.Errorf("%d invocations and %d messages, want 1 and 1", st.Batches, st.Messages)
	}
	t.Logf("100 serial steps in %s (%s per step), cold starts %v", took.Round(time.Millisecond),
		(took / 100).Round(10*time.Microsecond), s.coldStarts())
}

// TestFanOutConverges: a fan-out wider than InlineConcurrency runs the
// excess as SQS messages with a stepId in other invocations, and converges
// with exactly one step_completed per step, in at most
// ceil(20/InlineConcurrency) invocations and as many messages: the start,
// and the excess in groups of InlineConcurrency; no continuation and no
// wake-up at a lease's expiry (the executors take the run on themselves).
func TestFanOutConverges(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Parameters: map[string]string{"InlineConcurrency": "4"}})
	if got := s.mapping.Function.Env["SKEIN_INLINE_CONCURRENCY"]; got != "4" {
		t.Fatalf("SKEIN_INLINE_CONCURRENCY=%q, want 4 from the parameter", got)
	}
	ctx := context.Background()
	run, err := demo.FanOut.Start(ctx, s.client, 20)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 2470 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	s.drain(time.Minute)
	s.noFailures()
	s.exactlyOnce(run.ID(), 20)
	background := map[string]int{}
	for _, m := range s.messages() {
		if m.StepID != "" {
			background[m.StepID]++
		}
	}
	if len(background) == 0 {
		t.Error("no background step message (with stepId) was delivered")
	}
	groups, runMsgs := 0, 0
	for _, m := range s.messages() {
		if m.StepID != "" {
			groups++
		} else {
			runMsgs++
		}
	}
	st := s.esm.Stats()
	if st.Batches > 5 || groups != 4 || runMsgs != 1 {
		t.Errorf("%d invocations, %d group messages, %d run messages; want at most 5, 4 (16 steps in groups of 4) and 1 (the start)", st.Batches, groups, runMsgs)
	}
	t.Logf("fan-out of 20 with InlineConcurrency 4: completed in %s; %d invocations, %d messages: %d background steps in %d messages",
		info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond), st.Batches, st.Messages, len(background), groups)
}

// TestWebhookResumesHook: a webhook is resumed through the webhook function
// (a Function URL event to the real bootstrap): 202, the run completes with
// the body; afterwards, and for an unknown token, 404 with no body.
func TestWebhookResumesHook(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	fn := s.webhookFunction()
	ctx := context.Background()
	run, err := demo.Approval.Start(ctx, s.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for limit := time.Now().Add(time.Minute); token == ""; {
		p, err := s.world.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 0 {
			token = p.Items[0].Token
		}
		if time.Now().After(limit) {
			t.Fatal("the run created no webhook")
		}
		time.Sleep(50 * time.Millisecond)
	}
	call := func(token, body string) (events.LambdaFunctionURLResponse, *lambdaemu.Response) {
		t.Helper()
		path := workflow.WebhookPath + token
		req := events.LambdaFunctionURLRequest{
			Version: "2.0", RawPath: path, Headers: map[string]string{"content-type": "application/json"},
			RequestContext: events.LambdaFunctionURLRequestContext{
				DomainName: "abcdef.lambda-url.us-east-1.on.aws",
				HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: http.MethodPost, Path: path},
			},
			Body: body,
		}
		payload, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		r, err := fn.Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		if r.Err != nil {
			t.Fatalf("webhook function error: %+v", r.Err)
		}
		var resp events.LambdaFunctionURLResponse
		if err := json.Unmarshal(r.Payload, &resp); err != nil {
			t.Fatalf("response %s: %v", r.Payload, err)
		}
		return resp, r
	}
	resp, r := call(token, `{"ok":true}`)
	if resp.StatusCode != http.StatusAccepted || resp.Body != "" {
		t.Errorf("webhook: %d %q, want 202 and no body", resp.StatusCode, resp.Body)
	}
	info := s.wait(run.ID(), time.Minute)
	if out, err := demo.Approval.Get(s.client, run.ID()).Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != `{"ok":true}` {
		t.Fatalf("%s: %q, %v", info.Status, out, err)
	}
	if resp, _ := call(token, "again"); resp.StatusCode != http.StatusNotFound || resp.Body != "" {
		t.Errorf("after the run: %d %q, want 404 and no body", resp.StatusCode, resp.Body)
	}
	if resp, _ := call("nope", "x"); resp.StatusCode != http.StatusNotFound || resp.Body != "" {
		t.Errorf("unknown token: %d %q, want 404 and no body", resp.StatusCode, resp.Body)
	}
	t.Logf("webhook cold start %s (init), first response in %s", r.InitDuration, r.Duration)
}

// TestMalformedToDLQ: a body that is not a queue message is reported failed
// on each receive and lands in the DLQ after the template's maxReceiveCount,
// with a logged reason; a good run beside it is not disturbed.
func TestMalformedToDLQ(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Adjust: func(m *lambdaemu.Mapping) {
		m.Function.Timeout = 3 * time.Second
		m.Queue.VisibilityTimeout = 4 * time.Second
	}})
	max := s.mapping.Queue.Redrive.MaxReceiveCount
	s.sendRaw("this is not a skein message")
	ctx := context.Background()
	run, err := demo.Serial.Start(ctx, s.client, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.wait(run.ID(), time.Minute)
	s.drain(time.Duration(max+2) * 5 * time.Second)
	out, err := s.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &s.queues.DeadLetterURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
	if err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, m := range out.Messages {
		dead = append(dead, *m.Body)
	}
	if !slices.Equal(dead, []string{"this is not a skein message"}) {
		t.Errorf("DLQ holds %q", dead)
	}
	receives := 0
	for _, r := range s.batches.all() {
		for _, rec := range r.Event.Records {
			if rec.Body == "this is not a skein message" {
				receives++
			}
		}
	}
	if receives != max {
		t.Errorf("received %d times, want maxReceiveCount %d", receives, max)
	}
	logged := 0
	for _, r := range s.flowLogs.records() {
		if msg, _ := r["message"].(string); strings.Contains(msg, "malformed") && r["reason"] != nil {
			logged++
		}
	}
	if logged != max {
		t.Errorf("%d logged reasons, want %d", logged, max)
	}
}

// TestKilledMidStep: the bootstrap is killed while a step runs; the message
// comes back after the visibility timeout, the step re-runs once its lease
// has expired, as the same attempt (an interrupted attempt uses no retry),
// and the run completes with exactly one step_completed per step.
func TestKilledMidStep(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		// Short leases, so that the dead process's run and step leases
		// expire by the time the message comes back.
		Env: map[string]string{"SKEIN_STEP_LEASE_TTL": "3s", "SKEIN_RUN_LEASE_TTL": "3s", "SKEIN_TIME_BUDGET_MARGIN": "3s"},
		Adjust: func(m *lambdaemu.Mapping) {
			m.Function.Timeout = 10 * time.Second
			m.Queue.VisibilityTimeout = 11 * time.Second
		},
	})
	ctx := context.Background()
	run, err := demo.Slow.Start(ctx, s.client, demo.Work{Steps: 3, D: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Kill it during the second step.
	var victim string
	for limit := time.Now().Add(time.Minute); victim == ""; {
		if time.Now().After(limit) {
			t.Fatal("the second step never started")
		}
		steps, err := s.world.ListSteps(ctx, &world.ListStepsParams{RunID: run.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(steps.Items) == 2 && steps.Items[1].Status == world.StepStatusRunning {
			victim = steps.Items[1].StepID
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	killedAt := time.Now()
	if n := s.esm.Kill(); n != 1 {
		t.Fatalf("killed %d invocations, want 1", n)
	}
	info := s.wait(run.ID(), 2*time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 3 {
		t.Fatalf("%s: %d, %v (want 3: every step at attempt 1, the killed one's re-run too)", info.Status, out, err)
	}
	s.exactlyOnce(run.ID(), 3)
	var starts []time.Time
	var last *world.StepStarted
	for _, ev := range s.events(run.ID()) {
		if d, ok := ev.Data.(*world.StepStarted); ok && ev.CorrelationID == victim {
			starts = append(starts, ev.CreatedAt)
			last = d
		}
	}
	if len(starts) != 2 {
		t.Fatalf("the killed step started %d times, want 2", len(starts))
	}
	if last.Attempt != 2 || last.Interrupted != 1 {
		t.Errorf("the killed step's second step_started: attempt %d, %d interrupted; want 2 and 1", last.Attempt, last.Interrupted)
	}
	var received time.Time // when the killed invocation got its message
	for _, r := range s.batches.all() {
		if r.Response != nil && r.Response.Err != nil && r.Response.Err.Type == "Runtime.ExitError" {
			received = r.Response.Deadline.Add(-s.mapping.Function.Timeout)
		}
	}
	if gap := starts[1].Sub(received); gap < s.mapping.Queue.VisibilityTimeout-time.Second {
		t.Errorf("the step re-ran %s after its message was received, before the visibility timeout (%s) lapsed", gap, s.mapping.Queue.VisibilityTimeout)
	}
	crashed := 0
	for _, r := range s.batches.all() {
		if r.Response != nil && r.Response.Err != nil && r.Response.Err.Type == "Runtime.ExitError" {
			crashed++
		}
	}
	if crashed != 1 {
		t.Errorf("%d crashed invocations, want 1", crashed)
	}
	t.Logf("completed %s after the kill; %d invocations", time.Since(killedAt).Round(time.Millisecond), s.esm.Stats().Batches)
}

// TestTimeBudgetContinues: a run longer than the time budget stops starting
// steps at deadline-margin, is continued by a re-enqueued invocation, and
// completes with no failed message.
func TestTimeBudgetContinues(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		Parameters: map[string]string{"TimeBudgetMargin": "3s"},
		Adjust: func(m *lambdaemu.Mapping) {
			m.Function.Timeout = 6 * time.Second
			m.Queue.VisibilityTimeout = 7 * time.Second
		},
	})
	ctx := context.Background()
	run, err := demo.Slow.Start(ctx, s.client, demo.Work{Steps: 5, D: 1200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 5 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	s.drain(time.Minute)
	s.noFailuresStrict()
	s.exactlyOnce(run.ID(), 5)
	var durations []string
	for _, r := range s.batches.all() {
		if r.Response != nil {
			durations = append(durations, r.Response.Duration.Round(10*time.Millisecond).String())
			if r.Response.Duration > 6*time.Second {
				t.Errorf("an invocation ran %s, past the 6s timeout", r.Response.Duration)
			}
		}
	}
	if st := s.esm.Stats(); st.Batches < 2 {
		t.Errorf("%d invocations: the run did not outlive the budget", st.Batches)
	}
	t.Logf("invocations took %v", durations)
}

// TestSleep: a sleep is a delayed SQS message; the run wakes after it.
func TestSleep(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	run, err := demo.Sleeper.Start(ctx, s.client, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	slept, err := run.Result(ctx)
	if info.Status != world.RunStatusCompleted || err != nil || slept < 3*time.Second {
		t.Fatalf("%s: slept %s, %v", info.Status, slept, err)
	}
	total := info.CompletedAt.Sub(info.CreatedAt)
	if total > 6*time.Second {
		t.Errorf("a 3s sleep took %s", total)
	}
	s.drain(time.Minute)
	s.noFailures()
	t.Logf("3s sleep: run took %s, %d invocations", total.Round(time.Millisecond), s.esm.Stats().Batches)
}

// TestSleepChainedHops: with the longest queue delay shortened to 2s (as
// SQS's 15 minutes would be for a long sleep), a 7s sleep travels as a chain
// of delayed messages, each re-enqueued for the time left, and wakes on
// time.
func TestSleepChainedHops(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Parameters: map[string]string{"MaxQueueDelay": "2s"}})
	if got := s.mapping.Function.Env["SKEIN_MAX_QUEUE_DELAY"]; got != "2s" {
		t.Fatalf("SKEIN_MAX_QUEUE_DELAY=%q, want 2s from the parameter", got)
	}
	ctx := context.Background()
	run, err := demo.Sleeper.Start(ctx, s.client, 7*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	slept, err := run.Result(ctx)
	if info.Status != world.RunStatusCompleted || err != nil || slept < 7*time.Second {
		t.Fatalf("%s: slept %s, %v", info.Status, slept, err)
	}
	total := info.CompletedAt.Sub(info.CreatedAt)
	if total > 10*time.Second {
		t.Errorf("a 7s sleep took %s", total)
	}
	s.drain(time.Minute)
	s.noFailures()
	hops := 0
	for _, m := range s.messages() {
		if m.Hop > 0 {
			hops++
		}
	}
	if hops < 2 {
		t.Errorf("%d hops, want at least 2 (7s in hops of at most 2s)", hops)
	}
	t.Logf("7s sleep in hops of 2s: run took %s, %d hop messages, %d invocations", total.Round(time.Millisecond), hops, s.esm.Stats().Batches)
}

// TestCancelledSleepStopsHopping: a run cancelled during a long sleep stops
// receiving the sleep's wake-up: the next hop finds the run finished and
// drops the message, instead of one invocation per MaxQueueDelay until the
// sleep would have ended.
func TestCancelledSleepStopsHopping(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Parameters: map[string]string{"MaxQueueDelay": "1s"}})
	ctx := context.Background()
	run, err := demo.Sleeper.Start(ctx, s.client, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hops := func(from int) (n int) {
		for _, m := range s.messages()[from:] {
			if m.RunID == run.ID() && m.Hop > 0 {
				n++
			}
		}
		return n
	}
	for limit := time.Now().Add(30 * time.Second); hops(0) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatalf("%d hops in 30s, want 2 before the cancel", hops(0))
		}
	}
	cancelled := len(s.messages())
	if err := s.client.Cancel(ctx, run.ID(), "test"); err != nil {
		t.Fatal(err)
	}
	if info := s.wait(run.ID(), time.Minute); info.Status != world.RunStatusCancelled {
		t.Fatalf("run %s, want cancelled", info.Status)
	}
	time.Sleep(5 * time.Second) // 5 hops of 1s without the check
	s.drain(time.Minute)
	s.noFailures()
	// One hop may be on its way when the run ends; it is dropped.
	if n := hops(cancelled); n > 1 {
		t.Errorf("%d wake-ups received after the cancel, want at most 1", n)
	}
	t.Logf("%d hops before the cancel, %d after", hops(0)-hops(cancelled), hops(cancelled))
}

// TestStreamReadWhileRunning: a client reads a run's stream from S3 while
// the run writes it.
func TestStreamReadWhileRunning(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	run, err := demo.Streamer.Start(ctx, s.client, demo.Emission{Chunks: 6, Interval: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var got []string
	var firstAt time.Time
	for ch, err := range s.client.ReadStream(rctx, run.ID(), client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		got = append(got, string(ch.Data))
	}
	info := s.wait(run.ID(), time.Minute)
	want := []string{"chunk 0", "chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5"}
	if !slices.Equal(got, want) {
		t.Errorf("read %q", got)
	}
	if !firstAt.Before(info.CompletedAt) {
		t.Errorf("the first chunk arrived at %s, after the run completed at %s", firstAt, info.CompletedAt)
	}
	t.Logf("first chunk %s before the run completed", info.CompletedAt.Sub(firstAt).Round(time.Millisecond))
}

// TestRetriesWithBackoff: a step that fails twice is retried with backoff
// (from 1s) and succeeds on its third attempt.
func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	run, err := demo.Flaky.Start(ctx, s.client, demo.Flakiness{Failures: 2})
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 3 {
		t.Fatalf("%s: attempt %d, %v", info.Status, out, err)
	}
	var starts []time.Time
	retrying := 0
	for _, ev := range s.events(run.ID()) {
		switch ev.Type() {
		case world.EventStepStarted:
			starts = append(starts, ev.CreatedAt)
		case world.EventStepRetrying:
			retrying++
		}
	}
	if len(starts) != 3 || retrying != 2 {
		t.Fatalf("%d starts, %d step_retrying; want 3 and 2", len(starts), retrying)
	}
	var gaps []string
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		gaps = append(gaps, gap.Round(10*time.Millisecond).String())
		if low := time.Duration(1<<(i-1)) * 800 * time.Millisecond; gap < low {
			t.Errorf("retry %d came %s after the previous attempt, want at least %s", i, gap, low)
		}
	}
	s.drain(time.Minute)
	s.noFailures()
	t.Logf("attempts %s apart", strings.Join(gaps, ", "))
}

// TestCancellation: cancelling a sleeping run ends it as cancelled.
func TestCancellation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	run, err := demo.Sleeper.Start(ctx, s.client, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for limit := time.Now().Add(time.Minute); ; {
		st, err := statusOf(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if st == world.RunStatusRunning {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("the run is still %s", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := run.Cancel(ctx, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), time.Minute)
	if info.Status != world.RunStatusCancelled {
		t.Fatalf("status %s", info.Status)
	}
	if _, err := run.Result(ctx); err == nil {
		t.Error("a cancelled run has a result")
	}
	s.noFailures()
	t.Logf("cancelled: %s", fmt.Sprint(info.Status))
}

// TestColdStart measures the real bootstrap's cold start (process start to
// its first request for work, as Lambda's Init Duration) and first response
// for both handlers, over several fresh processes.
func TestColdStart(t *testing.T) {
	s := newStack(t, stackOptions{})
	const n = 5
	measure := func(name string, cfg lambdaemu.FunctionConfig, payload []byte) {
		var inits, firsts []time.Duration
		for range n {
			f, err := lambdaemu.NewFunction(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.Invoke(context.Background(), payload)
			_ = f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if r.Err != nil || !r.Cold {
				t.Fatalf("%s: %+v", name, r)
			}
			inits = append(inits, r.InitDuration)
			firsts = append(firsts, r.InitDuration+r.Duration)
		}
		slices.Sort(inits)
		slices.Sort(firsts)
		t.Logf("%s: init min %s median %s max %s; to first response min %s median %s", name,
			inits[0].Round(100*time.Microsecond), inits[n/2].Round(100*time.Microsecond), inits[n-1].Round(100*time.Microsecond),
			firsts[0].Round(100*time.Microsecond), firsts[n/2].Round(100*time.Microsecond))
		if inits[n/2] > time.Second {
			t.Errorf("%s: median cold start %s", name, inits[n/2])
		}
	}
	flow := s.mapping.FunctionConfig(bootstrap(t))
	flow.PassEnv = lambdaemu.AWSPassEnv()
	measure("flow", flow, []byte(`{"Records":[]}`))
	req, err := json.Marshal(events.LambdaFunctionURLRequest{RawPath: workflow.WebhookPath + "none",
		RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "POST"}}})
	if err != nil {
		t.Fatal(err)
	}
	measure("webhook", s.webhookConfig(), req)
	t.Logf("bootstrap: %.1f MB for %s", float64(bootstrapBin.size)/(1<<20), runtime.GOARCH)
}
