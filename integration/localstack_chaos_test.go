//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// The chaos suite's SIGKILL and duplicate-delivery faults through the
// LocalStack stack (lsChaos): a few runs of the mixed workflow on the
// deployed flow function, driven by LocalStack's SQS event source mapping,
// while the test SIGKILLs the function's runtime process in the middle of a
// step body and sends again a share of the messages the function sends.
// The invariants are the emulator chaos suite's (checkChaos).

// The chaos case's size: few runs and kills, so that it stays within a
// couple of minutes under qemu on a loaded 2-core machine (LocalStack's
// mapping polls one batch at a time, and each kill costs a visibility
// timeout and a cold start).
const (
	lsChaosRuns       = 4
	lsChaosKills      = 3
	lsChaosVisibility = "10" // seconds: how soon a killed batch's messages come back
	lsChaosReceives   = 10   // maxReceiveCount during the case (a message in two killed batches must not be dead-lettered)
)

// lsChaos runs lsChaosRuns runs of demo.Chaos through the deployed stack
// with lsChaosKills SIGKILLs of the flow function's runtime mid-step and
// duplicated SQS sends, then checks every run's log and step bodies
// (checkChaos: no run lost or doubled, every step's effect once), that no
// message was dead-lettered and that the queue drains.
func lsChaos(t *testing.T) {
	requireLocalExecutor(t)
	s := newLSStack(t)
	ctx := context.Background()
	seed := chaosSeed(t)
	fn := lsFlowFunctionName(t)
	dup := newSQSDuplicator(t, os.Getenv("AWS_ENDPOINT_URL_SQS"), 0.2, 3*time.Second, seed)
	old := lsFlowEnv(t, map[string]string{
		"SKEIN_STEP_LEASE_TTL": "3s", "SKEIN_RUN_LEASE_TTL": "3s", "SKEIN_CLAIM_CHECK_THRESHOLD": "1024",
		"AWS_ENDPOINT_URL_SQS": dup.srv.URL, // the function's sends go through the duplicator
	})
	defer lsFlowEnvIs(t, old)
	restore := lsQueueForChaos(t, s)
	defer restore()

	sink := newChaosSink(t)
	since := time.Now()
	s.started = since
	kill := startLSKiller(sink, fn, seed, lsChaosKills)
	stopKilling := sync.OnceValue(kill.halt)
	defer stopKilling()
	w := sinceWorld{World: s.world, since: since.Add(-time.Second)}

	plans := map[string]demo.ChaosPlan{}
	var wg sync.WaitGroup
	defer wg.Wait()
	resumes := newResumeLog()
	rctx, stopResuming := context.WithCancel(ctx)
	defer stopResuming()
	for i := range lsChaosRuns {
		p := demo.ChaosPlan{Key: fmt.Sprintf("ls-%d-%d", since.UnixNano(), i), Sink: sink.URL(), Serial: 3, Fan: 6, ChildSteps: 2,
			Work: 400 * time.Millisecond, Sleep: time.Second, Compensate: i%2 == 0}
		if i%3 == 0 {
			p.Pad = strings.Repeat("p", 2048) // claim-checked in S3
		}
		run, err := demo.Chaos.Start(ctx, s.client, p)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		plans[run.ID()] = p
		wg.Go(func() { resumeWhenWaiting(rctx, t, resumes, s.client, run.ID(), p.Key, 1+i%2) })
	}
	stuck := waitAllEnded(ctx, t, w, nil, time.Minute, 5*time.Minute)
	stopResuming()
	wg.Wait()
	kills := stopKilling()
	dup.wait()
	lsDrain(t, s, chaosDrainBound) // the queue drains, and the DLQ is empty
	violations, tally, err := checkChaos(ctx, w, sink, plans)
	if err != nil {
		t.Fatal(err)
	}
	violations = append(violations, stuck...)
	violations = append(violations, resumes.failures()...)
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
	evidence := logRunEvidence(ctx, t, w, violations)
	resumes.logRuns(t, evidence)
	if tally.Parents != lsChaosRuns || tally.Compensated == 0 {
		t.Errorf("%d chaos runs checked (want %d), %d compensations (want some)", tally.Parents, lsChaosRuns, tally.Compensated)
	}
	// A case where no fault landed proves nothing.
	if kills != lsChaosKills {
		t.Errorf("%d SIGKILLs mid-step, want %d", kills, lsChaosKills)
	}
	if dup.duplicates.Load() == 0 {
		t.Error("no message was sent twice")
	}
	fl := lsFlowLogSettled(t, since)
	t.Logf("localstack: %d runs (%d children), %d steps, %d step bodies, %d retries, %d hook payloads, %d compensations; "+
		"%d invocations, %d SIGKILLs mid-step, %d of %d function sends duplicated; %d resumer errors; %d violations; %s",
		tally.Parents, tally.Children, tally.Steps, tally.Bodies, tally.Retried, tally.HookPayloads, tally.Compensated,
		fl.invocations, kills, dup.duplicates.Load(), dup.sends.Load(), resumes.errorCount(), len(violations),
		time.Since(since).Round(time.Second))
}

// requireLocalExecutor skips a case that needs the functions to run as
// local processes (LocalStack's Lambda through the project's executor
// plugin, which localstack.sh env reports as SKEIN_LS_EXECUTOR): it kills
// them, or has them reach the test's own servers on 127.0.0.1, which a
// function in a container (LocalStack's Docker executor) cannot. `make
// localstack-test` always has it.
func requireLocalExecutor(t *testing.T) {
	t.Helper()
	if os.Getenv("SKEIN_LS_EXECUTOR") != "skein-local" {
		t.Skip("SKEIN_LS_EXECUTOR is not skein-local: the functions do not run as local processes (a LocalStack of your own, e.g. in Docker)")
	}
}

// lsFlowFunctionName is the deployed flow function's name.
func lsFlowFunctionName(tb testing.TB) string {
	tb.Helper()
	_, fn, ok := strings.Cut(lsDeployed.out["SKEIN_FLOW_FUNCTION_ARN"], ":function:")
	if !ok || fn == "" {
		tb.Fatalf("flow function ARN %q", lsDeployed.out["SKEIN_FLOW_FUNCTION_ARN"])
	}
	return fn
}

// lsQueueForChaos shortens the work queue's visibility timeout (the
// template's suits a 900 s function) and raises its maxReceiveCount for the
// case, and returns what restores them.
func lsQueueForChaos(t *testing.T, s *stack) func() {
	t.Helper()
	ctx := context.Background()
	attrs, err := s.clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.queues.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout, sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rp map[string]any
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &rp); err != nil {
		t.Fatalf("the queue's redrive policy %q: %v", attrs.Attributes["RedrivePolicy"], err)
	}
	rp["maxReceiveCount"] = lsChaosReceives
	raised, err := json.Marshal(rp)
	if err != nil {
		t.Fatal(err)
	}
	set := func(a map[string]string) {
		if _, err := s.clients.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(s.queues.URL), Attributes: a}); err != nil {
			t.Fatal(err)
		}
	}
	set(map[string]string{"VisibilityTimeout": lsChaosVisibility, "RedrivePolicy": string(raised)})
	return func() {
		set(map[string]string{"VisibilityTimeout": attrs.Attributes["VisibilityTimeout"], "RedrivePolicy": attrs.Attributes["RedrivePolicy"]})
	}
}

// sinceWorld is a World whose ListRuns lists only the runs created since a
// time: the chaos checks look at every run they list, and the deployed
// table also holds the other cases' runs.
type sinceWorld struct {
	world.World
	since time.Time
}

func (w sinceWorld) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	page, err := w.World.ListRuns(ctx, p)
	if err != nil {
		return nil, err
	}
	out := *page
	out.Items = slices.DeleteFunc(slices.Clone(page.Items), func(r world.Run) bool { return r.CreatedAt.Before(w.since) })
	return &out, nil
}

// sqsDuplicator is a proxy in front of an SQS endpoint that sends a share of
// the messages sent through it (SendMessage, SendMessageBatch) a second
// time, at once or after a random part of a few seconds: the same message
// delivered twice, possibly while the first copy is handled.
type sqsDuplicator struct {
	srv    *httptest.Server
	target string
	rate   float64
	within time.Duration

	mu  sync.Mutex
	rng *rand.Rand
	wg  sync.WaitGroup

	sends, duplicates atomic.Int64 // send requests forwarded, and sent again
	messages          atomic.Int64 // messages in the send requests forwarded (not counting the duplicates)
}

func newSQSDuplicator(tb testing.TB, target string, rate float64, within time.Duration, seed uint64) *sqsDuplicator {
	tb.Helper()
	if target == "" {
		tb.Fatal("AWS_ENDPOINT_URL_SQS is not set")
	}
	d := &sqsDuplicator{target: strings.TrimSuffix(target, "/"), rate: rate, within: within, rng: rand.New(rand.NewPCG(seed, seed^0x5e9d))}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	tb.Cleanup(func() {
		d.wait()
		d.srv.Close()
	})
	return d
}

// forward sends the request to the target, and returns the answer.
func (d *sqsDuplicator) forward(r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(r.Method, d.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	return http.DefaultClient.Do(req)
}

func (d *sqsDuplicator) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := d.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	op := r.Header.Get("X-Amz-Target")
	if resp.StatusCode != http.StatusOK || (op != "AmazonSQS.SendMessage" && op != "AmazonSQS.SendMessageBatch") {
		return
	}
	d.sends.Add(1)
	d.messages.Add(int64(sentMessages(op, body)))
	after, ok := d.draw()
	if !ok {
		return
	}
	d.wg.Go(func() {
		time.Sleep(after)
		if again, err := d.forward(r, body); err == nil {
			_ = again.Body.Close()
			if again.StatusCode == http.StatusOK {
				d.duplicates.Add(1)
			}
		}
	})
}

// sentMessages counts the messages of a send request: 1, or a batch's
// entries.
func sentMessages(op string, body []byte) int {
	if op == "AmazonSQS.SendMessage" {
		return 1
	}
	var batch struct{ Entries []json.RawMessage }
	if json.Unmarshal(body, &batch) != nil {
		return 0
	}
	return len(batch.Entries)
}

// draw decides whether a send is sent again, and when.
func (d *sqsDuplicator) draw() (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rng.Float64() >= d.rate {
		return 0, false
	}
	if d.rng.IntN(2) == 0 {
		return 0, true
	}
	return time.Duration(d.rng.Int64N(int64(d.within))), true
}

// wait waits for the duplicates on their way.
func (d *sqsDuplicator) wait() { d.wg.Wait() }

// lsKiller SIGKILLs the flow function's runtime process (started by
// LocalStack's Lambda through the executor plugin) in the middle of a step
// body: a process that reported a body's start to the sink and not its
// end, so that the kill lands mid-invocation. It kills want times, a random
// 1.5-3.5 s apart, and tells the sink when each died.
type lsKiller struct {
	sink     *chaosSink
	function string // the runtime's AWS_LAMBDA_FUNCTION_NAME
	want     int
	rng      *rand.Rand
	kills    atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func startLSKiller(sink *chaosSink, function string, seed uint64, want int) *lsKiller {
	k := &lsKiller{sink: sink, function: function, want: want, rng: rand.New(rand.NewPCG(seed, seed^0x15c4a0)),
		stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	return k
}

func (k *lsKiller) loop() {
	defer close(k.done)
	for int(k.kills.Load()) < k.want {
		t := time.NewTimer(1500*time.Millisecond + time.Duration(k.rng.Int64N(int64(2*time.Second))))
		select {
		case <-k.stop:
			t.Stop()
			return
		case <-t.C:
		}
		for !k.killOne() {
			select {
			case <-k.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// killOne kills one runtime process that is in a step body, if any.
func (k *lsKiller) killOne() bool {
	pids := k.sink.openPIDs()
	if len(pids) == 0 {
		return false
	}
	pid := pids[k.rng.IntN(len(pids))]
	if !isRuntimeOf(pid, k.function) || syscall.Kill(pid, syscall.SIGKILL) != nil {
		return false
	}
	k.sink.died(pid, time.Now())
	k.kills.Add(1)
	return true
}

// halt stops killing and returns how many processes were killed.
func (k *lsKiller) halt() int {
	close(k.stop)
	<-k.done
	return int(k.kills.Load())
}

// isRuntimeOf reports whether pid is a Lambda runtime process of function
// (its environment says so): a PID the sink saw may have been reused.
func isRuntimeOf(pid int, function string) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	vars := strings.Split(string(env), "\x00")
	return slices.Contains(vars, "AWS_LAMBDA_FUNCTION_NAME="+function) &&
		slices.ContainsFunc(vars, func(v string) bool { return strings.HasPrefix(v, "AWS_LAMBDA_RUNTIME_API=") })
}

// openPIDs returns the live processes that reported a step body's start and
// not yet its end.
func (s *chaosSink) openPIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	type key struct {
		run, step    string
		attempt, pid int
	}
	open := map[key]int{}
	for _, r := range s.recs {
		k := key{r.RunID, r.StepID, r.Attempt, r.PID}
		switch r.Phase {
		case "start":
			open[k]++
		case "end":
			open[k]--
		}
	}
	var out []int
	for k, n := range open {
		if n > 0 && s.deaths[k.pid].IsZero() && !slices.Contains(out, k.pid) {
			out = append(out, k.pid)
		}
	}
	slices.Sort(out)
	return out
}
