//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// The figures of one serial run (100 steps) and one fan-out (20 steps,
// InlineConcurrency 4) on each stack, for the closing note and
// localstack/README.md: the flow function's invocations, the SQS messages
// sent (the client's start and the function's sends, counted by a proxy in
// front of the function's SQS endpoint) and the function's DynamoDB
// requests (a proxy in front of its DynamoDB endpoint). lsFigures measures
// them through LocalStack (TestLocalStack/figures), TestFiguresEmulators
// on the emulator stack with the same parameters.

// figParameters are the template parameters both stacks run the figures
// with (lsParameters' FunctionTimeout and InlineConcurrency).
var figParameters = map[string]string{"FunctionTimeout": "900", "InlineConcurrency": "4"}

// figCounters are the proxies the flow function's requests go through.
type figCounters struct {
	ddb *requestCounter
	sqs *sqsDuplicator // rate 0: counts, sends nothing again
}

func newFigCounters(t *testing.T) *figCounters {
	t.Helper()
	ddb, q := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("AWS_ENDPOINT_URL_SQS")
	if ddb == "" || q == "" {
		t.Fatal("the figures need AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS")
	}
	return &figCounters{ddb: newRequestCounter(t, ddb), sqs: newSQSDuplicator(t, q, 0, 0, 1)}
}

// env points the flow function at the proxies.
func (c *figCounters) env() map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": c.ddb.srv.URL, "AWS_ENDPOINT_URL_SQS": c.sqs.srv.URL}
}

func (c *figCounters) reset() {
	c.ddb.reset()
	c.sqs.messages.Store(0)
	c.sqs.sends.Store(0)
}

// figure is one run's counts.
type figure struct {
	name                  string
	took                  time.Duration
	invocations, messages int
	ddbRequests           int
	ddbOps                string
}

func (f figure) String() string {
	return fmt.Sprintf("%s: %d invocations, %d SQS messages (the start and %d sent by the function), %d DynamoDB requests (%s); run took %s",
		f.name, f.invocations, f.messages, f.messages-1, f.ddbRequests, f.ddbOps, f.took.Round(time.Millisecond))
}

// figRuns are the two runs: a name, how to start one, and its result.
var figRuns = []struct {
	name  string
	start func(ctx context.Context, s *stack) (string, error)
	want  int
}{
	{"serial 100", func(ctx context.Context, s *stack) (string, error) {
		r, err := demo.Serial.Start(ctx, s.client, 100)
		if err != nil {
			return "", err
		}
		return r.ID(), nil
	}, 100},
	{"fan-out 20", func(ctx context.Context, s *stack) (string, error) {
		r, err := demo.FanOut.Start(ctx, s.client, 20)
		if err != nil {
			return "", err
		}
		return r.ID(), nil
	}, 2470},
}

// measure runs each of figRuns on s, one at a time; settle waits until the
// run's messages are consumed and returns the invocations since a time.
func measure(t *testing.T, s *stack, c *figCounters, settle func(since time.Time) int) []figure {
	t.Helper()
	ctx := context.Background()
	var out []figure
	for _, fr := range figRuns {
		c.reset()
		since := time.Now()
		id, err := fr.start(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		info := s.wait(id, 3*time.Minute)
		var got int
		if err := json.Unmarshal(info.Output, &got); info.Status != world.RunStatusCompleted || err != nil || got != fr.want {
			t.Fatalf("%s: %s, %s (%v)", fr.name, info.Status, info.Output, err)
		}
		inv := settle(since)
		c.ddb.mu.Lock()
		n := 0
		for _, k := range c.ddb.count {
			n += k
		}
		c.ddb.mu.Unlock()
		f := figure{name: fr.name, took: info.CompletedAt.Sub(info.CreatedAt), invocations: inv,
			messages: 1 + int(c.sqs.messages.Load()), ddbRequests: n, ddbOps: c.ddb.String()}
		if f.invocations == 0 || f.ddbRequests == 0 {
			t.Errorf("%s: nothing counted", f)
		}
		t.Logf("figures: %s", f)
		out = append(out, f)
	}
	return out
}

// lsFigures measures the figures through LocalStack.
func lsFigures(t *testing.T) {
	requireLocalExecutor(t)
	s := newLSStack(t)
	c := newFigCounters(t)
	old := lsFlowEnv(t, c.env())
	defer lsFlowEnvIs(t, old)
	measure(t, s, c, func(since time.Time) int {
		lsDrain(t, s, 2*time.Minute)
		return lsFlowLogSettled(t, since).invocations
	})
}

// TestFiguresEmulators measures the figures on the emulator stack (the
// project's Lambda runtime and event source mapping), with the parameters
// of the LocalStack deploy.
func TestFiguresEmulators(t *testing.T) {
	dynamotest.Clients(t, dynamoworld.ClientOptions{}) // skips (or fails) without emulators, as newStack does
	c := newFigCounters(t)
	s := newStack(t, stackOptions{Parameters: figParameters, TemplateTimings: true, Env: c.env()})
	measure(t, s, c, func(since time.Time) int {
		s.drain(2 * time.Minute)
		n := 0
		for _, b := range s.batches.all() {
			if b.Response != nil && !b.Response.Deadline.Add(-s.mapping.Function.Timeout).Before(since) {
				n++
			}
		}
		return n
	})
}
