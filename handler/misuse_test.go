package handler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

var misuseStep = workflow.NewStep("handler-misuse-echo", func(ctx context.Context, s string) (string, error) { return s, nil })

// stepFromGoroutine calls a step from a goroutine it starts, then waits for
// a hook nobody resumes; panicky panics after a step.
var (
	stepFromGoroutine = workflow.New("handler-step-from-goroutine", func(ctx workflow.Context, _ int) (string, error) {
		go func() { _, _ = misuseStep.Call(ctx, "from a goroutine") }()
		return workflow.NewHook[string](ctx, workflow.HookOptions{}).Receive(ctx)
	})
	panicky = workflow.New("handler-panicky", func(ctx workflow.Context, _ int) (string, error) {
		if _, err := misuseStep.Call(ctx, "first"); err != nil {
			return "", err
		}
		panic("the order book is empty")
	})
)

// TestSQSMisuseAndPanicFailOnlyTheirRuns: through the Lambda handler, a run
// whose workflow calls a step from its own goroutine fails with
// WORKFLOW_API_MISUSE, one that panics with USER_ERROR, and a serial run
// handled by the same handler completes.
func TestSQSMisuseAndPanicFailOnlyTheirRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(misuseStep, stepFromGoroutine, panicky)
	}})
	ctx := context.Background()
	bad, err := stepFromGoroutine.Start(ctx, b.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	boom, err := panicky.Start(ctx, b.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	good, err := serial.Start(ctx, b.client, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{bad.ID(), boom.ID(), good.ID()} {
		b.drive(t, id, 10)
	}
	if n, err := good.Result(ctx); err != nil || n != 5 {
		t.Fatalf("the healthy run: %d, %v", n, err)
	}
	for _, tc := range []struct {
		run  *client.Run[string]
		code string
		want string
	}{
		{bad, world.CodeWorkflowAPIMisuse, "was called from a goroutine the workflow function started"},
		{boom, world.CodeUserError, "workflow panicked"},
	} {
		_, err := tc.run.Result(ctx)
		var rf *workflow.RunFailedError
		if !errors.As(err, &rf) || rf.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %s: %v, want %s saying %q", tc.run.ID(), err, tc.code, tc.want)
		}
	}
}

// panickyWorld panics in ListEvents for one run: a stand-in for any panic
// on the goroutine that handles a message.
type panickyWorld struct {
	world.World
	runID atomic.Pointer[string]
}

func (w *panickyWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if id := w.runID.Load(); id != nil && *id == p.RunID {
		panic("listing events of " + p.RunID)
	}
	return w.World.ListEvents(ctx, p)
}

// TestSQSPanicWhileHandling: a panic while a message is handled fails that
// record (it is delivered again) and is logged; the invocation answers, and
// the other record of the batch completes its run.
func TestSQSPanicWhileHandling(t *testing.T) {
	t.Parallel()
	pw := &panickyWorld{}
	b := setup(t, setupOptions{wrap: func(w world.World) world.World { pw.World = w; return pw }})
	ctx := context.Background()
	bad, err := serial.Start(ctx, b.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	badID := bad.ID()
	pw.runID.Store(&badID)
	good, err := serial.Start(ctx, b.client, 3)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := lambdaCtx(t, "req-panic", 30*time.Second)
	defer cancel()
	resp, ds := b.batch(t, lctx, 10, 200*time.Millisecond)
	if len(ds) != 2 || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%d records, failures %v; want 2 records and 1 failure", len(ds), resp.BatchItemFailures)
	}
	if n, err := good.Result(ctx); err != nil || n != 3 {
		t.Fatalf("the other run: %d, %v", n, err)
	}
	if st, _ := statusOf(ctx, bad); st.Terminal() {
		t.Errorf("the run whose message panicked is %s", st)
	}
	logged := false
	for _, l := range b.logs.lines(t) {
		if msg, _ := l["message"].(string); strings.Contains(msg, "panic while handling a message") {
			logged = true
		}
	}
	if !logged {
		t.Error("the panic was not logged")
	}
}
