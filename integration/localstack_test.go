//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/lambdaemu"
	"github.com/skeinflow/skein/world"
)

// The LocalStack suite: template.yaml deployed into LocalStack
// (localstack/deploy.sh: sam build, sam deploy), the flow function run by
// LocalStack's Lambda (localstack/lambda-executor) behind LocalStack's own
// SQS event source mapping. The assertions are the emulator suite's (the
// stack helpers), on the deployed stack's resources. It runs with
// SKEIN_LOCALSTACK=1 (localstack/localstack.sh env sets it); with
// SKEIN_REQUIRE_LOCALSTACK=1 a missing LocalStack fails instead of skipping.
// `make localstack-test` runs it.

// lsParameters are the stack's parameter overrides for the suite (the rest
// are the template's defaults): the longest function timeout, so that the
// serial run fits one invocation's time budget however slow the machine
// (100 steps took up to a minute on LocalStack's DynamoDB under qemu, on a
// loaded 2-core machine: past the default 60s timeout's 50s budget); a
// fan-out of 20 travels in groups of 4; a poisoned message reaches the DLQ
// on its second receive. The cases that need short timings set them on the
// function or the queue for their own duration.
const lsParameters = "FunctionTimeout=900 InlineConcurrency=4 MaxReceiveCount=2"

var lsDeployed struct {
	once sync.Once
	out  map[string]string
	took time.Duration
	err  error
}

// requireLocalStack skips (or, with SKEIN_REQUIRE_LOCALSTACK=1, fails)
// without a LocalStack.
func requireLocalStack(t *testing.T) {
	t.Helper()
	if os.Getenv("SKEIN_LOCALSTACK") == "1" {
		return
	}
	const why = "SKEIN_LOCALSTACK is not 1: no LocalStack (run: bash localstack/localstack.sh start && eval \"$(bash localstack/localstack.sh env)\")"
	if os.Getenv("SKEIN_REQUIRE_LOCALSTACK") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// lsDeploy deploys template.yaml into LocalStack once per test binary and
// returns the stack's outputs (deploy.sh's export lines).
func lsDeploy(t *testing.T) map[string]string {
	t.Helper()
	lsDeployed.once.Do(func() {
		start := time.Now()
		cmd := exec.Command("bash", filepath.Join("localstack", "deploy.sh"), "deploy")
		cmd.Dir = ".."
		cmd.Env = os.Environ()
		if os.Getenv("SKEIN_LS_PARAMETERS") == "" {
			cmd.Env = append(cmd.Env, "SKEIN_LS_PARAMETERS="+lsParameters)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		lsDeployed.took = time.Since(start)
		if err != nil {
			lsDeployed.err = fmt.Errorf("localstack/deploy.sh deploy: %v\n%s", err, tail(stderr.String(), 8<<10))
			return
		}
		lsDeployed.out = parseExports(string(out))
	})
	if lsDeployed.err != nil {
		t.Fatal(lsDeployed.err)
	}
	return lsDeployed.out
}

// parseExports reads `export K=V` lines (V as Python's shlex.quote writes it).
func parseExports(s string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = strings.ReplaceAll(v[1:len(v)-1], `'"'"'`, "'")
		}
		out[k] = v
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

// newLSStack returns a stack on the deployed resources: a World and a
// client beside LocalStack's flow function. It has no ESM of its own
// (LocalStack's polls the queue), so the helpers that read the ESM's
// batches do not apply; lsDrain waits for the queue instead.
func newLSStack(t *testing.T) *stack {
	t.Helper()
	requireLocalStack(t)
	out := lsDeploy(t)
	for _, k := range []string{"SKEIN_TABLE", "SKEIN_QUEUE_URL", "SKEIN_DLQ_URL", "SKEIN_BUCKET"} {
		if out[k] == "" {
			t.Fatalf("the stack has no output for %s: %v", k, out)
		}
	}
	clients := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	s := &stack{tb: t, clients: clients, batches: &batchLog{}, flowLogs: &logBuffer{}}
	s.res = dynamoworld.Resources{Table: out["SKEIN_TABLE"], Bucket: out["SKEIN_BUCKET"]}
	s.queues = &lambdaemu.Queues{URL: out["SKEIN_QUEUE_URL"], ARN: out["SKEIN_QUEUE_ARN"], DeadLetterURL: out["SKEIN_DLQ_URL"]}
	ctx := context.Background()
	var err error
	if s.world, err = dynamoworld.New(ctx, dynamotest.Config(clients, s.res, s.queues.URL)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.world.Close() })
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if s.client, err = client.New(client.Config{World: s.world, Registry: reg}, knobs.WithResultPoll(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	s.started = time.Now()
	return s
}

// lsQueueDepth returns the queue's visible, in-flight and delayed messages.
func lsQueueDepth(t *testing.T, s *stack, url string) int {
	t.Helper()
	out, err := s.clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("queue attribute %q: %v", v, err)
		}
		n += c
	}
	return n
}

// lsDrain waits until LocalStack's mapping has consumed every message (the
// work queue holds none, visible, in flight or delayed, on two reads a
// poll apart) and checks that none reached the dead-letter queue.
func lsDrain(t *testing.T, s *stack, timeout time.Duration) {
	t.Helper()
	limit := time.Now().Add(timeout)
	empty := 0
	for empty < 2 {
		if lsQueueDepth(t, s, s.queues.URL) == 0 {
			empty++
		} else {
			empty = 0
		}
		if time.Now().After(limit) {
			t.Fatalf("the work queue still holds %d messages after %s", lsQueueDepth(t, s, s.queues.URL), timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := lsQueueDepth(t, s, s.queues.DeadLetterURL); n != 0 {
		t.Errorf("the dead-letter queue holds %d messages", n)
	}
}

// TestLocalStack runs the end-to-end cases through the deployed stack, one
// after the other (they share its queue and its counters).
func TestLocalStack(t *testing.T) {
	requireLocalStack(t)
	lsDeploy(t)
	t.Logf("stack deployed in %s", lsDeployed.took.Round(time.Second))
	t.Run("serial", lsSerial)
	t.Run("fan-out", lsFanOut)
	t.Run("sleep", lsSleep)
	t.Run("webhook", lsWebhook)
	t.Run("time-budget", lsTimeBudget)
	t.Run("claim-check", lsClaimCheck)
	t.Run("stream", lsStream)
	t.Run("poison", lsPoison)
	t.Run("encrypted", lsEncrypted)
	t.Run("chaos", lsChaos)
	t.Run("figures", lsFigures)
}

// lsFlowLogSettled reads the flow function's log since a time until two
// reads a second apart agree (LocalStack stores an invocation's log when
// it ends, which may be after its messages are deleted).
func lsFlowLogSettled(t *testing.T, since time.Time) lsFlowLog {
	t.Helper()
	prev := lsFlowLogSince(t, since)
	for i := 0; i < 30; i++ {
		time.Sleep(time.Second)
		cur := lsFlowLogSince(t, since)
		if cur.invocations == prev.invocations {
			return cur
		}
		prev = cur
	}
	return prev
}

// lsSerial: 100 serial steps complete through LocalStack's mapping, each
// step once.
func lsSerial(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	run, err := demo.Serial.Start(ctx, s.client, 100)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), 2*time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 100 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	lsDrain(t, s, time.Minute)
	s.exactlyOnce(run.ID(), 100)
	fl := lsFlowLogSettled(t, s.started)
	if fl.invocations != 1 {
		t.Errorf("%d invocations, want 1", fl.invocations)
	}
	t.Logf("100 serial steps in %s: %d invocation", info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond), fl.invocations)
}

// lsFanOut: a fan-out of 20 with InlineConcurrency 4 runs the excess as
// stepId messages and converges with each step once.
func lsFanOut(t *testing.T) {
	s := newLSStack(t)
	ctx := context.Background()
	run, err := demo.FanOut.Start(ctx, s.client, 20)
	if err != nil {
		t.Fatal(err)
	}
	info := s.wait(run.ID(), 2*time.Minute)
	if out, err := run.Result(ctx); info.Status != world.RunStatusCompleted || err != nil || out != 2470 {
		t.Fatalf("%s: %d, %v", info.Status, out, err)
	}
	lsDrain(t, s, time.Minute)
	s.exactlyOnce(run.ID(), 20)
	// The start and 16 background steps in groups of 4: at most 5
	// invocations (as on the emulator stack), and more than one: the
	// excess steps travelled as stepId messages to other invocations.
	fl := lsFlowLogSettled(t, s.started)
	if fl.invocations < 2 || fl.invocations > 5 {
		t.Errorf("%d invocations; want 2 to 5 (the start, 16 steps in groups of 4)", fl.invocations)
	}
	t.Logf("fan-out of 20 with InlineConcurrency 4: completed in %s; %d invocations",
		info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond), fl.invocations)
}

// lsSleep: a sleep is a delayed SQS message; the run wakes after it, in
// another invocation.
func lsSleep(t *testing.T) {
	s := newLSStack(t)
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
	lsDrain(t, s, time.Minute)
	t.Logf("3s sleep: run took %s", info.CompletedAt.Sub(info.CreatedAt).Round(time.Millisecond))
}
