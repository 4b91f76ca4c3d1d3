package handler_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// lateProbe lets a test release lateMisuse's goroutine and see its
// workflow function unwind.
type lateProbe struct {
	release chan struct{} // closed by the test: the goroutine calls a step
	mu      sync.Mutex
	live    int           // workflow functions running (a replay starts one more)
	unwound chan struct{} // closed when none is left
}

var lateProbes sync.Map // input key -> *lateProbe

// lateMisuse starts a goroutine that calls a step once the test releases
// it, after the session that ran the workflow has parked it (kept for the
// run's next session), and waits for a hook nobody resumes.
var lateMisuse = workflow.New("handler-late-misuse", func(ctx workflow.Context, key string) (string, error) {
	v, _ := lateProbes.Load(key)
	p := v.(*lateProbe)
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.live--; p.live == 0 {
			close(p.unwound)
		}
	}()
	go func() {
		<-p.release
		_, _ = misuseStep.Call(ctx, "late")
	}()
	return workflow.NewHook[string](ctx, workflow.HookOptions{}).Receive(ctx)
})

// TestForeignMisuseStopsTheKeptWorkflow: a goroutine of a workflow kept
// alive between sessions (the engine's sticky cache) that misuses the API
// fails the run from outside any session; the kept workflow is stopped
// then, not left parked in a process that may never see the run again (the
// wake-up it sends can go to another one). It was left until the process
// ended: a goroutine per such run.
func TestForeignMisuseStopsTheKeptWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{config: func(c *handler.Config) { c.Worker.Registry.MustRegister(misuseStep, lateMisuse) }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &lateProbe{release: make(chan struct{}), unwound: make(chan struct{})}
	lateProbes.Store(t.Name(), p)
	run, err := lateMisuse.Start(ctx, b.client, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	// Handle messages until the run waits on its hook and the queue is
	// quiet: its workflow is then parked and kept.
	for ctx.Err() == nil {
		lctx, lcancel := lambdaCtx(t, "req", time.Minute)
		_, ds := b.batch(t, lctx, 10, 200*time.Millisecond)
		lcancel()
		if len(ds) == 0 && len(countEvents(t, b.w, run.ID(), world.EventHookCreated)) == 1 {
			break
		}
	}
	close(p.release)
	_, err = run.Result(ctx)
	if rf := (*workflow.RunFailedError)(nil); !errors.As(err, &rf) || rf.Code != world.CodeWorkflowAPIMisuse {
		t.Fatalf("run: %v, want a failure with %s", err, world.CodeWorkflowAPIMisuse)
	}
	select {
	case <-p.unwound:
	case <-ctx.Done():
		t.Fatal("the workflow kept for the run is still parked after its goroutine failed the run")
	}
}
