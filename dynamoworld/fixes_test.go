package dynamoworld_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	skclient "github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestBlockedWorkflowOnDynamo: on DynamoDB, a step called from a goroutine
// that reports back over a channel fails its run with WORKFLOW_API_MISUSE
// (the abandoned session gives the run lease back, and the run's end is
// recorded), a healthy run beside it completes, and the worker returns
// promptly once stopped, with a run's code still blocked.
func TestBlockedWorkflowOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	echo := workflow.NewStep("echo", func(ctx context.Context, s string) (string, error) { return s, nil })
	goroutineCh := workflow.New("goroutine-ch", func(ctx workflow.Context, _ int) (string, error) {
		ch := make(chan string)
		go func() {
			s, _ := echo.Call(ctx, "x")
			ch <- s
		}()
		select {
		case s := <-ch:
			return s, nil
		case <-release:
			return "released", nil
		}
	})
	blocked := workflow.New("blocked", func(ctx workflow.Context, _ int) (string, error) {
		<-release
		return "released", nil
	})
	healthy := workflow.New("healthy", func(ctx workflow.Context, _ int) (string, error) { return echo.Call(ctx, "ok") })
	reg := workflow.NewRegistry().MustRegister(echo, goroutineCh, blocked, healthy)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- wk.Run(wctx) }()
	client := wk.Client()
	misused, err := goroutineCh.Start(ctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := healthy.Start(ctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ok.Result(ctx); err != nil || out != "ok" {
		t.Fatalf("healthy run: %q, %v", out, err)
	}
	_, err = misused.Result(ctx)
	var rf *workflow.RunFailedError
	if !errors.As(err, &rf) || rf.Code != world.CodeWorkflowAPIMisuse || !strings.Contains(err.Error(), `step "echo" was called from a goroutine`) {
		t.Fatalf("misused run: %v", err)
	}
	if _, err := blocked.Start(ctx, client, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	began := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Worker.Run did not return within 10s of its context's end")
	}
	t.Logf("Worker.Run returned %s after its context ended", time.Since(began).Round(time.Millisecond))
}

// TestCancelCascadesOnDynamo: on DynamoDB, cancelling a parent run cancels
// its child run waiting on a hook.
func TestCancelCascadesOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := workflow.New("child", func(ctx workflow.Context, token string) (string, error) {
		return workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
	})
	parent := workflow.New("parent", func(ctx workflow.Context, token string) (string, error) { return child.Call(ctx, token) })
	client, stop := deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(child, parent))
	defer stop()
	run, err := parent.Start(ctx, client, "cascade-dynamo")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the child's hook", func() bool { _, err := client.GetHookByToken(ctx, "cascade-dynamo"); return err == nil })
	if err := run.Cancel(ctx, "user"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the child cancelled", func() bool {
		page, err := client.ListRuns(ctx, skclient.ListRunsOptions{WorkflowName: "child"})
		return err == nil && len(page.Runs) == 1 && page.Runs[0].Status == world.RunStatusCancelled
	})
}

// TestClosedStreamOnDynamo: on DynamoDB, a write to a stream a step closed
// names the namespace the code used and matches world.ErrConflict.
func TestClosedStreamOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	closes := workflow.NewStep("close-log", func(ctx context.Context, _ int) (int, error) {
		sw := workflow.Writer(ctx, "log")
		if _, err := sw.Write([]byte("first")); err != nil {
			return 0, err
		}
		return 0, sw.Close()
	})
	again := workflow.NewStep("log-again", func(ctx context.Context, _ int) (string, error) {
		_, err := workflow.Writer(ctx, "log").Write([]byte("second"))
		if err == nil || !errors.Is(err, world.ErrConflict) {
			return "", workflow.Fatal(errors.New("want a conflict"))
		}
		return err.Error(), nil
	})
	wf := workflow.New("closed-log", func(ctx workflow.Context, _ int) (string, error) {
		if _, err := closes.Call(ctx, 0); err != nil {
			return "", err
		}
		return again.Call(ctx, 0)
	})
	client, stop := deployOn(t, ctx, w, workflow.NewRegistry().MustRegister(closes, again, wf))
	defer stop()
	run, err := wf.Start(ctx, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil || !strings.Contains(got, `stream "log" of run `+run.ID()+` is closed`) || strings.Contains(got, "user.") {
		t.Fatalf("write after close: %q, %v", got, err)
	}
}
