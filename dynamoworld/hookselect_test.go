package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestHookConflictInSelect: on DynamoDB too, a run racing a hook whose
// token another run holds against a timer fails with *HookConflictError
// (the hook_conflict and the wait_created share a commit), instead of
// being held as a replay divergence.
func TestHookConflictInSelect(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	approval := workflow.New("hook-select", func(ctx workflow.Context, token string) (string, error) {
		h := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token})
		f := h.Next(ctx)
		timer := workflow.NewTimer(ctx, time.Hour)
		if workflow.Select(ctx, f, timer) == 1 {
			return "timeout", nil
		}
		return f.Get(ctx)
	})
	reg := workflow.NewRegistry().MustRegister(approval)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	token := "select-" + fmt.Sprint(time.Now().UnixNano())
	holder, err := approval.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if h, err := wk.Client().GetHookByToken(ctx, token); err == nil && h.RunID == holder.ID() {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the holder's hook never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	run, err := approval.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	var hc *workflow.HookConflictError
	var rf *workflow.RunFailedError
	if !errors.As(err, &hc) || !errors.As(err, &rf) || rf.Code != world.CodeUserError || hc.ConflictingRunID != holder.ID() {
		t.Fatalf("run %s: %v, want a *HookConflictError naming %s", run.ID(), err, holder.ID())
	}
	if _, err := wk.Client().ResumeHook(ctx, token, "ok"); err != nil {
		t.Fatal(err)
	}
	if got, err := holder.Result(ctx); err != nil || got != "ok" {
		t.Fatalf("holder: %q, %v", got, err)
	}
}
