package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestHooksResumeWrongType: hooks resume cannot know the type a hook
// expects, so a payload of another type is accepted and recorded; the run
// then fails with HOOK_PAYLOAD_INVALID naming the token and the type (its
// workflow does not handle the error), which runs show reports.
func TestHooksResumeWrongType(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	const token = "bonus/wrong-type"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var runID string
	withWorker(ctx, t, db, func(c *client.Client) {
		run, err := demo.Start(ctx, c, demoInput{N: 1, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		runID = run.ID()
		for {
			if _, err := c.GetHookByToken(ctx, token); err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatal("the hook never appeared")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	cli("-db", db, "hooks", "resume", token, `"seven"`).expect(t, 0, "resumed hook", runID)
	withWorker(ctx, t, db, func(c *client.Client) {
		_, err := demo.Get(c, runID).Result(ctx)
		var rf *workflow.RunFailedError
		var pe *workflow.SerializationError
		if !errors.As(err, &rf) || !errors.As(err, &pe) || rf.Code != world.CodeHookPayloadInvalid || pe.Token != token || pe.What != "int" {
			t.Fatalf("run: %v", err)
		}
	})
	cli("-db", db, "runs", "show", runID).expect(t, 0, "HOOK_PAYLOAD_INVALID", `hook "bonus/wrong-type" received a payload that does not decode as int`)
}

// withWorker runs fn with a worker running on the store at db.
func withWorker(ctx context.Context, t *testing.T, db string, fn func(c *client.Client)) {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry().MustRegister(demo, flaky, square)
	worker, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	fn(worker.Client())
	stop()
	<-stopped
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
