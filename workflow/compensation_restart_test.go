package workflow_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestCompensationSurvivesRestart: the process goes away while the saga's
// second compensation (of b, the first to run) is in progress; a new worker
// on the same store finishes the saga, and each compensation takes effect
// exactly once, in reverse order, each recorded once as a completed step.
func TestCompensationSurvivesRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skein.db")
	j := &journal{}
	var first atomic.Bool // the first process's attempt of undo-b hangs
	first.Store(true)
	started := make(chan struct{}, 1)
	opts := workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return 20 * time.Millisecond }}
	var steps []*workflow.Step[string, string]
	var defs []workflow.Definition
	for _, x := range []string{"a", "b", "c"} {
		undo := workflow.NewStep("rs-undo-"+x, func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
			if x == "b" && first.Load() {
				started <- struct{}{}
				<-ctx.Done() // killed mid-compensation
				return struct{}{}, ctx.Err()
			}
			j.add("undo " + c.Result)
			return struct{}{}, nil
		}, opts)
		step := workflow.NewStep("rs-"+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", workflow.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		})
		steps = append(steps, workflow.WithCompensation(step, undo))
		defs = append(defs, undo, step)
	}
	saga := workflow.New("rs-saga", func(ctx workflow.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "rolled back", workflow.Compensate(ctx)
			}
		}
		return "done", nil
	})
	defs = append(defs, saga)
	start := func() (*localworld.World, *workflow.Client, func()) {
		lw, err := localworld.Open(localworld.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		reg := workflow.NewRegistry().MustRegister(defs...)
		w, err := workflow.NewWorker(workflow.WorkerConfig{World: lw, Registry: reg, PollWait: 50 * time.Millisecond,
			Engine: workflow.EngineOptions{StepLeaseTTL: 300 * time.Millisecond, RunPollInterval: 20 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return lw, w.Client(), func() { cancel(); <-done; _ = lw.Close() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, client, stop := start()
	run, err := saga.Start(ctx, client, "order")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stop() // the process goes away during the compensation of b
	first.Store(false)

	lw, client, stop := start()
	defer stop()
	out, err := saga.Get(client, run.ID()).Result(ctx)
	if err != nil || out != "rolled back" {
		t.Fatalf("saga = %q, %v", out, err)
	}
	if got, want := j.lines(), []string{"undo b-done", "undo a-done"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	p, err := lw.ListSteps(ctx, &world.ListStepsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	completed := map[string]int{}
	for _, s := range p.Items {
		if s.Status == world.StepStatusCompleted {
			completed[s.StepName]++
		}
		if s.StepName == "rs-undo-b" && s.Attempt < 2 {
			t.Errorf("rs-undo-b completed at attempt %d: the first process's attempt was not interrupted", s.Attempt)
		}
	}
	if completed["rs-undo-a"] != 1 || completed["rs-undo-b"] != 1 || completed["rs-undo-c"] != 0 {
		t.Errorf("completed steps = %v, want one of each of rs-undo-a and rs-undo-b", completed)
	}
}
