package dynamoworld_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestSagaOnDynamo: on DynamoDB and SQS, a saga of three steps whose third
// fails compensates the first two in reverse order, each exactly once,
// also when the worker goes away during the first compensation and a new
// one takes it over after its lease: for a workflow that compensates
// itself (Compensate) and for one compensated after its failure
// (WithCompensateOnFailure), whose outcome is known before the
// compensations end.
func TestSagaOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	for _, auto := range []bool{false, true} {
		name := map[bool]string{false: "explicit", true: "on failure"}[auto]
		t.Run(name, func(t *testing.T) {
			testSagaOnDynamo(t, w, auto)
		})
	}
}

func testSagaOnDynamo(t *testing.T, w world.World, auto bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := "dsaga-"
	if auto {
		prefix = "dcof-"
	}
	var mu sync.Mutex
	var undone []string
	var first atomic.Bool
	first.Store(true)
	started := make(chan struct{}, 1)
	opts := workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return 50 * time.Millisecond }}
	var steps []*workflow.Step[string, string]
	reg := workflow.NewRegistry()
	for _, x := range []string{"a", "b", "c"} {
		undo := workflow.NewStep(prefix+"undo-"+x, func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
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
		step := workflow.WithCompensation(workflow.NewStep(prefix+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" {
				return "", workflow.Fatal(errors.New("out of stock"))
			}
			return x + "-done", nil
		}), undo)
		reg.MustRegister(undo, step)
		steps = append(steps, step)
	}
	saga := workflow.New(prefix+"wf", func(ctx workflow.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				if auto {
					return "", err
				}
				return "rolled back", workflow.Compensate(ctx)
			}
		}
		return "done", nil
	})
	if auto {
		saga = saga.WithCompensateOnFailure()
	}
	reg.MustRegister(saga)
	deploy := func() (*client.Client, func()) {
		wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4,
			Visibility: 2 * time.Second, Engine: worker.EngineOptions{StepLeaseTTL: time.Second}}, knobs.WithPollWait(100*time.Millisecond))
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
	live := make(chan []world.EventType, 1)
	go func() { live <- subscribeAll(ctx, t, client, run.ID()) }()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the compensation of b never started")
	}
	if auto {
		// The outcome is known while the compensation runs.
		if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "out of stock") {
			t.Fatalf("Result = %v, want the step's failure", err)
		}
	}
	stop()
	first.Store(false)
	client, stop = deploy()
	defer stop()
	out, err := saga.Get(client, run.ID()).Result(ctx)
	if auto != (err != nil) || !auto && out != "rolled back" {
		t.Fatalf("saga = %q, %v", out, err)
	}
	info, err := client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; c.Succeeded != 2 || c.Failed != 0 || c.Status() != world.StepStatusCompensated {
		t.Errorf("compensations = %+v", c)
	}
	mu.Lock()
	got := slices.Clone(undone)
	mu.Unlock()
	if want := []string{"b-done", "a-done"}; !slices.Equal(got, want) {
		t.Errorf("compensated %q, want %q", got, want)
	}
	var trail []string
	for _, e := range listAll(t, w, run.ID()) {
		switch d := e.Data.(type) {
		case *world.CompStarted:
			trail = append(trail, "started "+d.StepName)
		case *world.CompSucceeded:
			trail = append(trail, "succeeded "+d.StepName)
		case *world.CompFailed, *world.CompRetryScheduled:
			trail = append(trail, string(e.Type()))
		case *world.StepCreated:
			if strings.Contains(d.StepName, "undo") {
				t.Errorf("a compensation ran as a step: %s", d.StepName)
			}
		}
	}
	b, a := prefix+"b", prefix+"a"
	if want := []string{"started " + b, "started " + b, "succeeded " + b, "started " + a, "succeeded " + a}; !slices.Equal(trail, want) {
		t.Errorf("comp events %q, want %q", trail, want)
	}
	// A subscription that followed the run live, and one made once it is
	// at rest, both get every event up to run_deactivated, then the end.
	want := len(listAll(t, w, run.ID()))
	for name, got := range map[string][]world.EventType{"live": <-live, "at rest": subscribeAll(ctx, t, client, run.ID())} {
		if len(got) != want || got[len(got)-1] != world.EventRunDeactivated {
			t.Errorf("%s subscription: %d events ending %v, want %d ending run_deactivated", name, len(got), got[len(got)-1:], want)
		}
	}
}

// subscribeAll follows a run from its first event until the subscription
// ends, within 30 seconds, and returns the event types it got.
func subscribeAll(ctx context.Context, t *testing.T, c *client.Client, runID string) []world.EventType {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx, client.SubscribeOptions{RunID: runID})
	if err != nil {
		t.Error(err)
		return nil
	}
	defer sub.Close()
	var types []world.EventType
	for u, err := range sub.All() {
		if err != nil {
			t.Errorf("subscription of %s: %v after %v", runID, err, types)
			return types
		}
		types = append(types, u.Event.Type())
	}
	return types
}
