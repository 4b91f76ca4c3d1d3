package dynamoworld_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// approve is deployed in two versions: v1 charges the amount the run was
// started with, v2 (the bad deploy) charges twice as much, with the same
// step at the same place, so only the input digest step_created records
// tells them apart. Both then wait for an approval.
func approveVersion(charge *workflow.Step[int, int], factor int) *workflow.Workflow[int, int] {
	return workflow.New("approve", func(ctx workflow.Context, amount int) (int, error) {
		c, err := charge.Call(ctx, amount*factor)
		if err != nil {
			return 0, err
		}
		v, err := workflow.NewHook[int](ctx, workflow.HookOptions{Token: "approve-" + ctx.Workflow().RunID}).Receive(ctx)
		return c + v, err
	})
}

// deployOn runs a worker of reg on w until the returned stop is called.
func deployOn(t *testing.T, ctx context.Context, w *dynamoworld.World, reg *workflow.Registry) (*skclient.Client, func()) {
	t.Helper()
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4,
		// A stopped worker's long poll may still take a message: short
		// visibility brings it back to the next deployment soon.
		Visibility: 2 * time.Second}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- wk.Run(wctx) }()
	return wk.Client(), func() { cancel(); <-done }
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHeldRunOnDynamo: on DynamoDB, a run whose code changed incompatibly
// (the same step called with other arguments) is held, listed with its
// divergence, resumed by a retry once compatible code is deployed, and a
// second held run is failed on request.
func TestHeldRunOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	charge := workflow.NewStep("charge", func(ctx context.Context, amount int) (int, error) { return amount, nil })
	v1, v2 := approveVersion(charge, 1), approveVersion(charge, 2)

	client, stop := deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(v1, charge))
	var ids []string
	for _, amount := range []int{10, 20} {
		run, err := v1.Start(ctx, client, amount)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID())
	}
	for _, id := range ids {
		waitUntil(t, ctx, "v1 waiting for approval", func() bool { _, err := client.GetHookByToken(ctx, "approve-"+id); return err == nil })
	}
	stop()

	client, stop = deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(v2, charge))
	for _, id := range ids {
		if _, err := client.ResumeHook(ctx, "approve-"+id, 1); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, ctx, "the run held", func() bool {
			s, err := statusOfID(ctx, client, id)
			if s.Terminal() {
				t.Fatalf("run %s %s, want it held", id, s)
			}
			return err == nil && s == world.RunStatusHeld
		})
	}
	page, err := client.ListRuns(ctx, skclient.ListRunsOptions{Status: world.RunStatusHeld})
	if err != nil || len(page.Runs) != 2 {
		t.Fatalf("held runs %+v, %v; want 2", page, err)
	}
	for _, r := range page.Runs {
		if r.Hold == nil || r.Hold.Code != world.CodeReplayDivergence || r.Hold.Attempt != 1 || !strings.Contains(r.Hold.Err.Error(), "input digest") {
			t.Fatalf("run %s hold %+v, want the input digests' divergence", r.ID, r.Hold)
		}
	}
	stop()

	client, stop = deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(v1, charge))
	defer stop()
	if err := client.RetryRun(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	var got int
	if err := client.Result(ctx, ids[0], &got); err != nil || got != 11 {
		t.Fatalf("result %d, %v; want 10 charged + 1", got, err)
	}
	if err := client.FailRun(ctx, ids[1], "gave up"); err != nil {
		t.Fatal(err)
	}
	info, err := client.GetRun(ctx, ids[1])
	if err != nil || info.Status != world.RunStatusFailed || info.ErrorCode != world.CodeReplayDivergence || info.Hold != nil {
		t.Fatalf("failed held run: %+v, %v", info, err)
	}
}
