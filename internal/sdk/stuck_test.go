package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// blockedWorkflows are workflows whose code blocks its own goroutine on
// something other than the workflow API. release ends their blocking when
// the test is over, so that no goroutine outlives the package's tests;
// chanForever sends its input on blocking (when there is room) as it
// starts to block.
func blockedWorkflows(release <-chan struct{}, blocking chan<- int) (goroutineCh, chanForever, healthyRun *sdk.Workflow[int, string]) {
	goroutineCh = sdk.New("goroutine-ch", func(ctx sdk.Context, _ int) (string, error) {
		ch := make(chan string)
		go func() {
			s, _ := misuseEcho.Call(ctx, "x")
			ch <- s
		}()
		select {
		case s := <-ch:
			return s, nil
		case <-release:
			return "released", nil
		}
	})
	chanForever = sdk.New("chan-forever", func(ctx sdk.Context, n int) (string, error) {
		select {
		case blocking <- n:
		default:
		}
		<-release
		return "released", nil
	})
	healthyRun = sdk.New("healthy-beside", func(ctx sdk.Context, n int) (string, error) {
		return misuseEcho.Call(ctx, "ok")
	})
	return goroutineCh, chanForever, healthyRun
}

// TestBlockedWorkflowCode: workflow code that blocks its goroutine outside
// the workflow API neither hangs the worker nor other runs. A step called
// from a goroutine that reports back over a channel fails its run with
// WORKFLOW_API_MISUSE; code blocked for longer than MaxSlice fails with
// REPLAY_TIMEOUT; a healthy run beside them completes; and Worker.Run
// returns promptly once its context ends, even with code still blocked.
func TestBlockedWorkflowCode(t *testing.T) {
	t.Parallel()
	release, blocking := make(chan struct{}), make(chan int, 8)
	goroutineCh, chanForever, healthyRun := blockedWorkflows(release, blocking)
	reg := sdk.NewRegistry().MustRegister(misuseEcho, goroutineCh, chanForever, healthyRun)
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Registered last, run first: the blocked goroutines end before the
	// store closes.
	t.Cleanup(func() { _ = lw.Close() })
	t.Cleanup(func() { close(release) })
	// MaxSlice is real time (a slice blocked on the wall clock): 3s, well
	// past what a healthy slice takes on a busy machine. StopTimeout is
	// long, so that a Worker.Run waiting for the blocked code would show.
	wk, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: lw, Registry: reg, Concurrency: 4,
		StopTimeout: time.Minute, Engine: sdk.EngineOptions{MaxSlice: 3 * time.Second}}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	client := wk.Client()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()

	misused, err := goroutineCh.Start(rctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := chanForever.Start(rctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := healthyRun.Start(rctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := healthy.Result(rctx); err != nil || out != "ok" {
		t.Fatalf("healthy run: %q, %v", out, err)
	}
	for _, c := range []struct {
		run  *sdk.Run[string]
		code string
		want string
	}{
		{misused, world.CodeWorkflowAPIMisuse, `step "misuse-echo" was called from a goroutine`},
		{blocked, world.CodeReplayTimeout, "blocks outside the workflow API"},
	} {
		_, err := c.run.Result(rctx)
		rf := mustAs[*sdk.RunFailedError](t, err)
		if rf.Code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %s failed with %s: %v; want %s, %q", c.run.ID(), rf.Code, err, c.code, c.want)
		}
	}
	// A run whose code blocks when the worker stops: Run returns anyway,
	// after a second's grace, not after StopTimeout.
	if _, err := chanForever.Start(rctx, client, 2); err != nil {
		t.Fatal(err)
	}
	for n := 0; n != 2; {
		select {
		case n = <-blocking:
		case <-rctx.Done():
			t.Fatal("the second blocked run was not taken on")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Worker.Run did not return within 20s of its context's end (StopTimeout is a minute)")
	}
}

// TestCallAfterRunEnded: a goroutine's step call after the workflow
// returned is dropped, the run keeps its outcome, and the worker logs a
// warning naming the call and WORKFLOW_API_MISUSE.
func TestCallAfterRunEnded(t *testing.T) {
	t.Parallel()
	// The goroutine calls once the run has ended (ended), not after a
	// while: on a busy machine a while can be too short.
	ended, called := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fireAndForget := sdk.New("fire-and-forget", func(ctx sdk.Context, _ int) (string, error) {
		go once.Do(func() {
			defer close(called)
			<-ended
			_, _ = misuseEcho.Call(ctx, "late")
		})
		return "returned", nil
	})
	var buf lockedBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := newEnvWith(t, envOptions{logger: logger}, misuseEcho, fireAndForget)
	ctx := e.ctx()
	run, err := fireAndForget.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != "returned" {
		t.Fatalf("run: %q, %v", out, err)
	}
	close(ended)
	<-called
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		line := ""
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "after its run ended") {
				line = l
			}
		}
		if line != "" {
			for _, want := range []string{"level=WARN", world.CodeWorkflowAPIMisuse, `step \"misuse-echo\"`, run.ID()} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q lacks %q", line, want)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the dropped call; log:\n%s", buf.String())
		}
	}
	info, err := e.client.GetRun(ctx, run.ID())
	if err != nil || info.Status != world.RunStatusCompleted {
		t.Fatalf("run %+v, %v", info, err)
	}
}
