package dynamoworld_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestSagaOnDynamo: on DynamoDB and SQS, a saga of three steps whose third
// fails compensates the first two in reverse order, each exactly once, also
// when the worker goes away during the first compensation and a new one
// takes the run over.
func TestSagaOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var undone []string
	var first atomic.Bool
	first.Store(true)
	started := make(chan struct{}, 1)
	opts := workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return 50 * time.Millisecond }}
	var steps []*workflow.Step[string, string]
	reg := workflow.NewRegistry()
	for _, x := range []string{"a", "b", "c"} {
		undo := workflow.NewStep("dsaga-undo-"+x, func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
			if x == "b" && first.Load() {
				started <- struct{}{}
				<-ctx.Done() // the worker goes away mid-compensation
				return struct{}{}, ctx.Err()
			}
			mu.Lock()
			undone = append(undone, c.Result)
			mu.Unlock()
			return struct{}{}, nil
		}, opts)
		step := workflow.WithCompensation(workflow.NewStep("dsaga-"+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", workflow.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		}), undo)
		reg.MustRegister(undo, step)
		steps = append(steps, step)
	}
	saga := workflow.New("dsaga", func(ctx workflow.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "rolled back", workflow.Compensate(ctx)
			}
		}
		return "done", nil
	})
	reg.MustRegister(saga)
	deploy := func() (*workflow.Client, func()) {
		wk, err := workflow.NewWorker(workflow.WorkerConfig{World: w, Registry: reg, Concurrency: 4, PollWait: 100 * time.Millisecond,
			Visibility: 2 * time.Second, Engine: workflow.EngineOptions{StepLeaseTTL: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- wk.Run(wctx) }()
		return wk.Client(), func() { cancel(); <-done }
	}

	client, stop := deploy()
	run, err := saga.Start(ctx, client, "order")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the compensation of b never started")
	}
	stop()
	first.Store(false)
	client, stop = deploy()
	defer stop()
	if out, err := saga.Get(client, run.ID()).Result(ctx); err != nil || out != "rolled back" {
		t.Fatalf("saga = %q, %v", out, err)
	}
	mu.Lock()
	got := slices.Clone(undone)
	mu.Unlock()
	if want := []string{"b-done", "a-done"}; !slices.Equal(got, want) {
		t.Errorf("compensated %q, want %q", got, want)
	}
	completed := map[string]int{}
	for _, e := range listAll(t, w, run.ID()) {
		if d, ok := e.Data.(*world.StepCompleted); ok {
			completed[d.StepName]++
		}
	}
	if completed["dsaga-undo-a"] != 1 || completed["dsaga-undo-b"] != 1 || completed["dsaga-undo-c"] != 0 {
		t.Errorf("step_completed per step = %v, want one each for dsaga-undo-a and dsaga-undo-b", completed)
	}
}

// TestCompensateOnFailureOnDynamo: on DynamoDB and SQS, a workflow defined
// WithCompensateOnFailure whose third step fails compensates the first two
// in reverse order, once each, and then fails with the step's error.
func TestCompensateOnFailureOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var undone []string
	reg := workflow.NewRegistry()
	var steps []*workflow.Step[string, string]
	for _, x := range []string{"a", "b", "c"} {
		undo := workflow.NewStep("dcof-undo-"+x, func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
			mu.Lock()
			defer mu.Unlock()
			undone = append(undone, c.Result)
			return struct{}{}, nil
		})
		step := workflow.WithCompensation(workflow.NewStep("dcof-"+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", workflow.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		}), undo)
		reg.MustRegister(undo, step)
		steps = append(steps, step)
	}
	wf := workflow.New("dcof", func(ctx workflow.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "done", nil
	}).WithCompensateOnFailure()
	client, stop := deployOn(t, ctx, w, reg.MustRegister(wf))
	defer stop()
	run, err := wf.Start(ctx, client, "order")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "out of stock") {
		t.Fatalf("Result error = %v, want the step's failure", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b-done", "a-done"}; !slices.Equal(undone, want) {
		t.Errorf("compensated %q, want %q", undone, want)
	}
}
