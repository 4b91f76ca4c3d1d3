package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

var startDouble = sdk.NewStep("start-double", func(ctx context.Context, n int) (int, error) { return 2 * n, nil })

var startWorkflow = sdk.New("start-idempotent", func(ctx sdk.Context, n int) (int, error) {
	return startDouble.Call(ctx, n)
})

// A start whose wake message was lost (the process died before a worker took
// it) is resumed by the next start with the same idempotency key; a start of
// a finished run only returns it.
func TestStartWithKeyWakesUnfinishedRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	reg := sdk.NewRegistry()
	if err := reg.Register(startWorkflow, startDouble); err != nil {
		t.Fatal(err)
	}
	client, err := sdk.NewClient(sdk.ClientConfig{World: lw, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	first, err := startWorkflow.Start(ctx, client, 21, sdk.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Existed() {
		t.Fatal("first start reports an existing run")
	}
	// Lose the wake message, as a crash before any worker ran would.
	lost, err := lw.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: time.Second, Visibility: time.Hour})
	if err != nil || len(lost) != 1 {
		t.Fatalf("receive the first wake: %d messages, %v", len(lost), err)
	}
	if err := lw.Ack(ctx, &world.AckParams{Receipt: lost[0].Receipt}); err != nil {
		t.Fatal(err)
	}

	again, err := startWorkflow.Start(ctx, client, 21, sdk.WithIdempotencyKey("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Existed() || again.ID() != first.ID() {
		t.Fatalf("second start: existed=%v id=%s, want the first run %s", again.Existed(), again.ID(), first.ID())
	}
	worker, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: lw, Registry: reg}, knobs.WithPollWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	stopWorker := sync.OnceValue(func() error { stop(); return <-done })
	defer stopWorker()
	out, err := again.Result(ctx)
	if err != nil || out != 42 {
		t.Fatalf("result = %d, %v; want 42", out, err)
	}

	// Finished: a third start returns the run and enqueues nothing.
	third, err := startWorkflow.Start(ctx, client, 21, sdk.WithIdempotencyKey("order-7"))
	if err != nil || !third.Existed() || third.ID() != first.ID() {
		t.Fatalf("third start: existed=%v id=%s err=%v", third.Existed(), third.ID(), err)
	}
	if err := stopWorker(); err != nil {
		t.Fatal(err)
	}
	if msgs, err := lw.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: 200 * time.Millisecond, Visibility: time.Hour}); err != nil || len(msgs) != 0 {
		t.Fatalf("a start of a finished run enqueued %d messages (%v)", len(msgs), err)
	}
}

// TestStartUnknownWorkflow: a client given a Registry refuses to start a
// workflow name the registry does not hold, with a typed error and no run;
// StartUnregistered starts it anyway, and a client without a Registry
// starts any name.
func TestStartUnknownWorkflow(t *testing.T) {
	t.Parallel()
	known := sdk.New("known-flow", func(sdk.Context, int) (int, error) { return 1, nil })
	e := newEnv(t, known)
	bare, err := sdk.NewClient(sdk.ClientConfig{World: e.lw})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		client  *sdk.Client
		wf      string
		opts    []sdk.StartOption
		refused bool
	}{
		{"unknown name", e.client, "no-such-flow", nil, true},
		{"unknown name from the worker's client", e.worker.Client(), "no-such-flow", nil, true},
		{"known name", e.client, "known-flow", nil, false},
		{"unknown name, started elsewhere", e.client, "remote-flow", []sdk.StartOption{sdk.StartUnregistered()}, false},
		{"client without a registry", bare, "remote-flow", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			id, err := tc.client.Start(ctx, tc.wf, 1, tc.opts...)
			if !tc.refused {
				if err != nil || id == "" {
					t.Fatalf("Start: %q, %v", id, err)
				}
				return
			}
			var unknown *sdk.RequestError
			if !errors.Is(err, sdk.ErrUnknownWorkflow) || !errors.As(err, &unknown) || unknown.Workflow != tc.wf || id != "" {
				t.Fatalf("Start: %q, %v; want a *RequestError (ErrUnknownWorkflow) naming %q", id, err, tc.wf)
			}
			runs, err := e.lw.ListRuns(ctx, &world.ListRunsParams{WorkflowName: tc.wf})
			if err != nil || len(runs.Items) != 0 {
				t.Errorf("runs of %q: %+v, %v; want none", tc.wf, runs, err)
			}
		})
	}
}
