//go:build integration

package integration

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// TestPinnedFlowFunction: the flow function, on the real bootstrap behind
// the emulated event source mapping, is pinned to v2 (SKEIN_VERSION,
// SKEIN_VERSIONS). It runs a run of v2, and leaves a run of v1 queued:
// sent back more often than the queue's maxReceiveCount (2 here), the v1
// run's messages never reach the dead-letter queue and no record is
// reported failed; the run stays pending, and every refusal is a log
// record naming its version. A worker of v1 on the same table and queue
// (the old deployment, kept to drain) then runs it to its end.
func TestPinnedFlowFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		// The pin comes from the template's parameters, as sam deploy
		// --parameter-overrides sets them.
		Parameters: map[string]string{"MaxReceiveCount": "2", "CodeVersion": "v2", "AcceptedVersions": "v2"},
		Env:        map[string]string{"SKEIN_VERSION_RETRY_DELAY": "1s", "SKEIN_VERSION_RETRY_LIMIT": "1s"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reg, err := demo.Registry()
	if err != nil {
		t.Fatal(err)
	}
	client := func(version string) *client.Client {
		c, err := client.New(client.Config{World: s.world, Registry: reg, Version: version}, knobs.WithResultPoll(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	v1, v2 := client("v1"), client("v2")

	newer, err := demo.Serial.Start(ctx, v2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.wait(newer.ID(), time.Minute); info.Status != world.RunStatusCompleted || info.Version != "v2" {
		t.Fatalf("the run of v2: %s, version %q", info.Status, info.Version)
	}

	older, err := demo.Serial.Start(ctx, v1, 2)
	if err != nil {
		t.Fatal(err)
	}
	refusals := func() int {
		n := 0
		for _, r := range s.flowLogs.records() {
			if r["version"] == "v1" && r["run"] == older.ID() && strings.Contains(fmt.Sprint(r), "compatible executor") {
				n++
			}
		}
		return n
	}
	for refusals() < 4 {
		if ctx.Err() != nil {
			t.Fatalf("the function refused the run of v1 %d times, want 4", refusals())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if info, err := v1.GetRun(ctx, older.ID()); err != nil || info.Status != world.RunStatusPending || info.Version != "v1" {
		t.Fatalf("the run of v1 under a function of v2: %+v, %v; want pending, of v1", info, err)
	}
	dlq, err := s.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &s.queues.DeadLetterURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(dlq.Messages) != 0 {
		t.Fatalf("%d messages reached the dead-letter queue: %v", len(dlq.Messages), dlq.Messages)
	}
	s.noFailures()

	// The old deployment, kept to drain its runs.
	w, err := worker.New(worker.Config{World: s.world, Registry: reg, Version: "v1", Versions: worker.Versions{"v1"},
		Visibility: 5 * time.Second}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if got, err := older.Result(ctx); err != nil || got != 2 {
		t.Fatalf("the run of v1 on a worker of v1: %d, %v", got, err)
	}
}
