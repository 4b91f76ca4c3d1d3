//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/world"
)

// TestChaosLambda runs many runs of the mixed workflow (demo.Chaos: serial
// steps, a fan-out wider than InlineConcurrency, a retried step, a sleep, a
// hook resumed once or twice at once, a child run, and for half of them the
// compensation of their steps) on the real bootstrap
// behind the emulated Lambda runtime and SQS event source mapping, while
// the flow processes are SIGKILLed at random, received messages are
// delivered a second time or see their visibility timeout expire mid-step,
// and the bootstrap's DynamoDB and S3 requests meet throttling, 500s, 503s,
// lost answers and transaction conflicts. Then every run's log and every
// step body is checked against the invariants (checkChaos), and the DLQ
// must be empty.
//
// SKEIN_CHAOS_RUNS (default 12) runs are started over SKEIN_CHAOS_DURATION
// (default 15s) or longer, at most 3 x MaximumConcurrency at a time. A run
// is stuck when it has not ended, no run has changed for a minute, and the
// work queue has held no message in that minute (or chaosEndLimit after
// the last start). The kills are paced by the stack's progress (see
// startKiller), and leases and the function's timeout are sized for a
// starved machine: a slow machine takes longer, but sees the same faults
// per invocation.
// SKEIN_CHAOS_SEED repeats a run's random choices (not their timing).
func TestChaosLambda(t *testing.T) {
	t.Parallel()
	seed := chaosSeed(t)
	runs := envInt(t, chaosRunsEnv, 12)
	duration := envDuration(t, chaosDurationEnv, 15*time.Second)
	// Leases and the function's timeout are real time, the subject here
	// (an expired lease is how a lost executor is found), sized for a
	// starved machine: on a 2-core machine at a load of 25, with the
	// emulators in JVMs beside it, a lease renewal took seconds, and leases
	// of 3 s were taken over from live executors (STEP_EXECUTOR_LOST after
	// 10 "interruptions" that were only delays), and invocations of 10 s
	// were cut off before their first step. The faults per invocation stay
	// as they were; only a slow machine's delays stop counting as faults.
	s := newStack(t, stackOptions{
		NoESM: true,
		Env: map[string]string{
			"SKEIN_INLINE_CONCURRENCY": "4", "SKEIN_STEP_LEASE_TTL": "10s", "SKEIN_RUN_LEASE_TTL": "10s",
			"SKEIN_TIME_BUDGET_MARGIN": "3s", "SKEIN_CLAIM_CHECK_THRESHOLD": "1024",
		},
		Adjust: func(m *lambdaemu.Mapping) {
			m.Function.Timeout = 20 * time.Second
			m.Queue.VisibilityTimeout = 24 * time.Second
			m.MaximumConcurrency = 4
		},
	})
	inj := dynamotest.NewInjector(seed, 0.04, dynamotest.Throttled, dynamotest.LimitExceeded, dynamotest.ServerError,
		dynamotest.Unavailable, dynamotest.LostAnswer, dynamotest.TxConflict)
	inj.Only = map[string]bool{"DynamoDB": true, "S3": true}
	inj.Cover = []string{"DynamoDB/throttled", "DynamoDB/500", "DynamoDB/lost-answer", "DynamoDB/TransactWriteItems/lost-answer",
		"DynamoDB/TransactWriteItems/transaction-conflict", "S3/throttled", "S3/500", "S3/lost-answer"}
	faultProxies(t, inj, &s.fc)
	sink := newChaosSink(t)
	redeliver := &chaosSQS{Client: s.clients.SQS, queueURL: s.queues.URL, rate: 0.15, within: 3 * time.Second,
		rng: rand.New(rand.NewPCG(seed, seed^0xd0b1e))}
	var err error
	s.esm, err = lambdaemu.NewESM(lambdaemu.ESMConfig{
		Mapping: s.mapping, SQS: redeliver, QueueURL: s.queues.URL, QueueARN: s.queues.ARN, Function: s.fc,
		PollWait: time.Second, OnBatch: s.batches.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	kill := startKiller(s.esm, sink, seed, 300*time.Millisecond, 2500*time.Millisecond, chaosKillsMin, chaosKillsMax)
	stopKilling := sync.OnceValue(kill.halt)
	defer stopKilling()

	ctx := context.Background()
	plans := map[string]demo.ChaosPlan{}
	var wg sync.WaitGroup
	defer wg.Wait() // after stopResuming: no resumer logs once the test has ended
	resumes := newResumeLog()
	rctx, stopResuming := context.WithCancel(ctx)
	defer stopResuming()
	began := time.Now()
	maxOpen := 3 * s.mapping.MaximumConcurrency
	for i := range runs {
		// Spread the starts over the duration, and keep up to maxOpen runs
		// going (a long run is paced by the stack's throughput).
		if d := time.Until(began.Add(duration * time.Duration(i) / time.Duration(runs))); d > 0 {
			time.Sleep(d)
		}
		waitFewerOpen(ctx, t, s, maxOpen)
		p := demo.ChaosPlan{Key: fmt.Sprintf("%s-%d", s.res.Table, i), Sink: sink.URL(), Serial: 3, Fan: 6, ChildSteps: 2,
			Work: 400 * time.Millisecond, Sleep: time.Second}
		if i%3 == 0 {
			p.Pad = strings.Repeat("p", 2048) // claim-checked in S3
		}
		p.Compensate = i%2 == 0 // half the runs compensate their steps at the end

		run, err := demo.Chaos.Start(ctx, s.client, p)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		plans[run.ID()] = p
		wg.Go(func() { resumeWhenWaiting(rctx, t, resumes, s.client, run.ID(), p.Key, 1+i%2) })
	}
	stuck := waitAllEnded(ctx, t, s.world, queueBusy(ctx, s), time.Minute, chaosEndLimit)
	var dead []string
	deadExpected := 0
	if len(stuck) > 0 {
		// A message whose every receive the test killed is dead-lettered by
		// SQS, as it would be in production, and its run waits for an
		// operator. Do what the operator does once the incident is over:
		// stop the kills, move the dead letters back to the work queue, and
		// the runs must then finish from them.
		stopKilling()
		dead, deadExpected = deadLetters(ctx, t, s, true)
		t.Logf("%d runs stuck, %d dead letters redriven: %s", len(stuck), deadExpected, strings.Join(stuck, "; "))
		stuck = waitAllEnded(ctx, t, s.world, queueBusy(ctx, s), time.Minute, chaosEndLimit)
	}
	endDepth, depthErr := lambdaemu.ReadQueueDepth(ctx, s.clients.SQS, s.queues.URL)
	ended := time.Now()
	stopResuming()
	wg.Wait()
	kills := stopKilling()
	redeliver.wait()
	// What is left in the queue once the last run has ended is only what
	// still has a reason to run (rest checks, a duplicate on its way): a
	// finished run's messages are dropped, not sent again, so the queue
	// drains within the bound.
	dctx, cancelDrain := context.WithTimeout(ctx, chaosDrainBound)
	if err := s.esm.Drain(dctx); err != nil {
		t.Errorf("the queue did not drain within %s after the last run ended: %v", chaosDrainBound, err)
	}
	cancelDrain()
	drained := time.Since(ended)
	if depthErr != nil {
		t.Errorf("queue depth when the last run ended: %v", depthErr)
	}
	t.Logf("queue when the last run ended: %d visible, %d in flight, %d delayed; drained to 0 %s later (bound %s)",
		endDepth.Visible, endDepth.NotVisible, endDepth.Delayed, drained.Round(100*time.Millisecond), chaosDrainBound)
	violations, tally, err := checkChaos(ctx, s.world, sink, plans)
	if err != nil {
		t.Fatal(err)
	}
	violations = append(violations, stuck...)
	violations = append(violations, resumes.failures()...)
	more, moreExpected := deadLetters(ctx, t, s, false)
	violations = append(violations, append(dead, more...)...)
	deadExpected += moreExpected
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
	counts := inj.Counts()
	for _, k := range inj.Cover {
		if counts[k] == 0 {
			t.Errorf("no %s fault was injected: the suite proves nothing about it", k)
		}
	}
	evidence := logRunEvidence(ctx, t, s.world, violations)
	resumes.logRuns(t, evidence)
	logFlowLines(t, s, evidence)
	st, es := s.esm.Stats(), sumFunctionErrors(s)
	if tally.Compensated == 0 {
		t.Error("no step was compensated")
	}
	t.Logf("lambda: %d runs (%d children), %d steps, %d step bodies, %d retries, %d hook payloads, %d compensations; %d invocations, %d cold starts, "+
		"%d SIGKILLs, %d crashed and %d timed-out invocations, %d duplicate deliveries, %d visibility expiries, faults %s; %d messages dead-lettered by kills and injected redeliveries alone; "+
		"%d resumer errors; %d violations; %s",
		tally.Parents, tally.Children, tally.Steps, tally.Bodies, tally.Retried, tally.HookPayloads, tally.Compensated, st.Batches, st.ColdStarts,
		kills, es["Runtime.ExitError"], es["Sandbox.Timedout"], redeliver.duplicates.Load(), redeliver.expiries.Load(),
		faultKinds(inj), deadExpected, resumes.errorCount(), len(violations), time.Since(began).Round(time.Second))
}

// chaosKillsMin and chaosKillsMax pace the SIGKILLs by progress: one per 3
// to 7 invocations (about 1 in 5; unloaded, the timer alone made about 1 in
// 6), whatever the machine's speed. Paced by the clock alone, a starved
// machine saw one kill per two invocations, and steps ran out of attempts.
const (
	chaosKillsMin = 3
	chaosKillsMax = 7
)

// chaosEndLimit bounds how long the runs of a chaos test may take to end
// after the last start, stuck or not (see waitAllEnded), on the slowest
// machine the suite runs on.
const chaosEndLimit = 15 * time.Minute

// chaosDrainBound bounds how long the work queue of a chaos test may take
// to drain once its last run has ended (a few visibility timeouts of 12s).
const chaosDrainBound = 2 * time.Minute

// waitFewerOpen waits until fewer than n chaos runs (parents) are going and
// have moved in the last minute: a stuck run (checked at the end) must not
// take a place for good.
func waitFewerOpen(ctx context.Context, t *testing.T, s *stack, n int) {
	for {
		runs, err := allRuns(ctx, s.world)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, r := range runs {
			if r.WorkflowName == demo.Chaos.Name() && !r.Status.Terminal() && time.Since(r.UpdatedAt) < time.Minute {
				open++
			}
		}
		if open < n {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitAllEnded waits until every run of w has ended, and returns a
// violation for each run still going once nothing could move it on: no
// run at all has changed for quiet, and busy (the work queue's depth, nil
// for none) found no message, visible, in flight or delayed, at the start
// and at the end of that period. A run held up by a killed invocation
// has its message in flight, and comes back after the visibility timeout;
// a stuck one has nothing left that could move it. So a slow machine only
// makes the wait longer, never a run stuck: progress, not wall-clock
// time, is judged. limit bounds the whole wait (a livelock: runs that keep
// changing and never end; MaxDeliveries and MaxInterruptions end each run
// long before it on a working stack).
func waitAllEnded(ctx context.Context, t *testing.T, w world.World, busy func() (bool, error), quiet, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	var calm time.Time // since when the queue has been seen empty, with no run changed since
	for {
		runs, err := allRuns(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		var open []world.Run
		var last time.Time
		for _, r := range runs {
			if r.UpdatedAt.After(last) {
				last = r.UpdatedAt
			}
			if !r.Status.Terminal() {
				open = append(open, r)
			}
		}
		if len(open) == 0 {
			return nil
		}
		empty := true
		if busy != nil {
			b, err := busy()
			if err != nil {
				t.Fatal(err)
			}
			empty = !b
		}
		if !empty {
			calm = time.Time{}
		} else if calm.IsZero() || last.After(calm) {
			calm = time.Now()
		}
		idle := time.Since(last)
		if (!calm.IsZero() && time.Since(calm) > quiet && idle > quiet) || time.Now().After(deadline) {
			var out []string
			for _, r := range open {
				out = append(out, fmt.Sprintf("run %s (%s) is stuck %s: last changed %s ago, no run has changed for %s, and the queue has been empty for %s",
					r.RunID, r.WorkflowName, r.Status, time.Since(r.UpdatedAt).Round(time.Second), idle.Round(time.Second), sinceOrNever(calm)))
			}
			return out
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sinceOrNever is how long ago t was, or "0s" for the zero time.
func sinceOrNever(t time.Time) string {
	if t.IsZero() {
		return "0s"
	}
	return time.Since(t).Round(time.Second).String()
}

// queueBusy reports whether s's work queue holds a message: visible, in
// flight or delayed.
func queueBusy(ctx context.Context, s *stack) func() (bool, error) {
	return func() (bool, error) {
		d, err := lambdaemu.ReadQueueDepth(ctx, s.clients.SQS, s.queues.URL)
		return !d.Empty(), err
	}
}

// deadLetters reads the DLQ. A message there is expected when SQS's rules
// put it there because of the test's own doing or the machine's: each of
// its receives was SIGKILLed with its invocation, cut off by the
// function's deadline (a starved machine's invocation runs out of time: a
// Lambda timeout, which the engine treats as a lost executor, as it does a
// kill), or handled successfully (acknowledged, then back through an
// injected redelivery). A receive that the function failed itself
// otherwise (reporting the message failed for another reason) makes it a
// violation. Every run must still complete, from the message's
// replacement or, redriven, from the message itself. It returns the
// violations and the number expected. With redrive, it sends each
// expected one back to the work queue and deletes it from the DLQ, as an
// operator's redrive does.
func deadLetters(ctx context.Context, t *testing.T, s *stack, redrive bool) ([]string, int) {
	cutOff := deadlineReceives(s.flowLogs.records())
	receives := map[string][]string{} // message ID -> how each receive ended
	for _, r := range s.batches.all() {
		for _, rec := range r.Event.Records {
			outcome := receiveOutcome(r, rec.MessageId)
			if outcome == "failed" && cutOff[rec.MessageId+"#"+rec.Attributes["ApproximateReceiveCount"]] {
				outcome = "deadline"
			}
			receives[rec.MessageId] = append(receives[rec.MessageId], outcome)
		}
	}
	var out []string
	expected := 0
	for range 20 {
		got, err := s.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.queues.DeadLetterURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			outcomes := receives[aws.ToString(m.MessageId)]
			if len(outcomes) > 0 && !slices.Contains(outcomes, "failed") {
				expected++
				if redrive {
					redriveOne(ctx, t, s, m)
				}
				continue
			}
			out = append(out, fmt.Sprintf("dead letter %s %s, receives %v", aws.ToString(m.MessageId), aws.ToString(m.Body), outcomes))
		}
	}
	return out, expected
}

// deadlineReceives returns the receives ("<message ID>#<receive count>")
// that the flow function reported failed because its invocation ran out of
// time (handler/sqs.go: "time budget exceeded", or cut off at the
// deadline), from its log records.
func deadlineReceives(records []map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		msg, _ := r["message"].(string)
		id, _ := r["messageId"].(string)
		attempt, _ := r["attempt"].(float64)
		if id == "" || !strings.HasPrefix(msg, "handler: ") ||
			!(strings.Contains(msg, "at the deadline") || strings.Contains(msg, "no time left")) {
			continue
		}
		out[fmt.Sprintf("%s#%d", id, int(attempt))] = true
	}
	return out
}

// receiveOutcome says how one receive of a message ended: "killed" (its
// invocation was SIGKILLed), "deadline" (the invocation timed out), "ok"
// (deleted as handled) or "failed".
func receiveOutcome(r lambdaemu.BatchReport, id string) string {
	switch {
	case r.InvokeErr != nil || r.Response == nil:
		return "failed"
	case r.Response.Err != nil && r.Response.Err.Type == "Runtime.ExitError":
		return "killed"
	case r.Response.Err != nil && r.Response.Err.Type == "Sandbox.Timedout":
		return "deadline"
	case r.Response.Err != nil || !slices.Contains(r.Settlement.Delete, id):
		return "failed"
	}
	return "ok"
}

// sumFunctionErrors counts the invocations that ended in a function error,
// by type.
func sumFunctionErrors(s *stack) map[string]int {
	out := map[string]int{}
	for _, r := range s.batches.all() {
		if r.Response != nil && r.Response.Err != nil {
			out[r.Response.Err.Type]++
		}
	}
	return out
}

// faultKinds lists the injected faults by service and kind, without the
// per-operation counts.
func faultKinds(inj *dynamotest.Injector) string {
	var parts []string
	total := 0
	for k, n := range inj.Counts() {
		if strings.Count(k, "/") == 1 {
			parts = append(parts, k+"="+strconv.Itoa(n))
			total += n
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}

// logFlowLines logs the flow function's log lines and the batches that name
// one of the runs.
func logFlowLines(t *testing.T, s *stack, runIDs []string) {
	if len(runIDs) == 0 {
		return
	}
	names := func(line string) bool {
		for _, id := range runIDs {
			if strings.Contains(line, id) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(s.flowLogs.String(), "\n") {
		if names(line) && n < 400 {
			b.WriteString("  " + line + "\n")
			n++
		}
	}
	t.Logf("flow function lines naming %v:\n%s", runIDs, b.String())
	b.Reset()
	for i, r := range s.batches.all() {
		for _, rec := range r.Event.Records {
			if !names(rec.Body) {
				continue
			}
			outcome, at := "ok", ""
			if r.Response != nil {
				at = r.Response.Deadline.Add(-s.mapping.Function.Timeout).Format("15:04:05.000")
			}
			if r.InvokeErr != nil {
				outcome = r.InvokeErr.Error()
			} else if r.Response != nil && r.Response.Err != nil {
				outcome = r.Response.Err.Type + ": " + r.Response.Err.Message
			} else if r.Response != nil {
				outcome = string(r.Response.Payload)
			}
			fmt.Fprintf(&b, "  batch %d worker %d at %s: %s #%s %s -> %s\n", i, r.Worker, at,
				rec.MessageId, rec.Attributes["ApproximateReceiveCount"], rec.Body, outcome)
		}
	}
	t.Logf("batches naming them:\n%s", b.String())
}

// redriveOne moves a dead letter back to the work queue.
func redriveOne(ctx context.Context, t *testing.T, s *stack, m sqstypes.Message) {
	if _, err := s.clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.queues.URL), MessageBody: m.Body}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl: aws.String(s.queues.DeadLetterURL), ReceiptHandle: m.ReceiptHandle,
	}); err != nil {
		t.Fatal(err)
	}
}
