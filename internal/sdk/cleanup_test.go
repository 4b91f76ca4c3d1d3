package sdk_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// cleanupEvent returns the run_cleaned_up of a log, failing unless there is
// exactly one.
func cleanupEvent(t *testing.T, evs []world.Event) *world.RunCleanedUp {
	t.Helper()
	if n := countEvents(evs, world.EventRunCleanedUp); n != 1 {
		t.Fatalf("log %v holds %d run_cleaned_up, want 1", eventTypes(evs), n)
	}
	return evs[eventIndex(evs, world.EventRunCleanedUp)].Data.(*world.RunCleanedUp)
}

// TestCleanupHook: the hook runs once per completed run, with its input,
// result, the state before completion (its last step's result) and its
// attributes, after
// run_completed and before Result returns; never for a failed run.
func TestCleanupHook(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls []sdk.Cleanup[string, string]
	)
	release := make(chan struct{})
	double := sdk.NewStep("cleanup-double", func(ctx context.Context, in string) (string, error) { return in + in, nil })
	wf := sdk.New("cleanup-wf", func(ctx sdk.Context, in string) (string, error) {
		if in == "fail" {
			return "", errors.New("no")
		}
		first, err := double.Call(ctx, in)
		if err != nil {
			return "", err
		}
		last, err := double.Call(ctx, first)
		return last + "!", err
	}).WithCleanup(func(ctx context.Context, c *sdk.Cleanup[string, string]) error {
		if c.Input == "slow" {
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, *c)
		return nil
	})
	e := newEnv(t, wf, double)
	ctx := e.ctx()

	run, err := wf.Start(ctx, e.client, "ab", sdk.WithAttributes(map[string]string{"tenant": "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "abababab!" {
		t.Fatalf("Result = %q, %v", got, err)
	}
	mu.Lock()
	if len(calls) != 1 {
		t.Fatalf("hook called %d times by the time Result returned, want 1", len(calls))
	}
	c := calls[0]
	mu.Unlock()
	var prev string
	if err := c.DecodePrevious(&prev); err != nil || prev != "abababab" || c.Input != "ab" || c.Result != "abababab!" ||
		c.RunID != run.ID() || c.WorkflowName != "cleanup-wf" || c.Attributes["tenant"] != "t1" || c.CompletedAt.IsZero() {
		t.Fatalf("hook got %+v (previous %q, %v)", c, prev, err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil || info.Cleanup != world.CleanupDone {
		t.Fatalf("after the hook: cleanup %q, %v; want done", info.Cleanup, err)
	}
	if err := e.client.CleanupErr(ctx, run.ID()); err != nil {
		t.Fatalf("CleanupErr of a cleaned-up run: %v", err)
	}
	evs := e.events(run.ID())
	if d := cleanupEvent(t, evs); d.Error != nil {
		t.Fatalf("run_cleaned_up records error %v", d.Error)
	}
	if i := eventIndex(evs, world.EventRunCleanedUp); i < eventIndex(evs, world.EventRunCompleted) || i > eventIndex(evs, world.EventRunDeactivated) {
		t.Fatalf("log %v: want run_completed, run_cleaned_up, run_deactivated", eventTypes(evs))
	}

	// Result waits for the hook.
	slow, err := wf.Start(ctx, e.client, "slow")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := slow.Result(ctx); got <- err }()
	waitUntil(t, "the slow run to complete", func() bool {
		st, _ := statusOf(ctx, slow)
		return st == world.RunStatusCompleted
	})
	select {
	case err := <-got:
		t.Fatalf("Result returned (%v) before the cleanup hook did", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := e.client.CleanupErr(ctx, slow.ID()); !errors.Is(err, sdk.ErrCleanupPending) {
		t.Fatalf("CleanupErr while the hook runs: %v; want ErrCleanupPending", err)
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	failed, err := wf.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failed.Result(ctx); err == nil {
		t.Fatal("the failing run succeeded")
	}
	info, err = e.client.WaitDeactivated(ctx, failed.ID())
	if err != nil || info.Cleanup != "" {
		t.Fatalf("failed run: cleanup %q, %v; want none", info.Cleanup, err)
	}
	if n := countEvents(e.events(failed.ID()), world.EventRunCleanedUp); n != 0 {
		t.Fatalf("failed run's log holds %d run_cleaned_up", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("hook called %d times for two completed runs and a failed one, want 2", len(calls))
	}
}

// TestCleanupHookFails: a hook that returns an error, panics or runs past
// its timeout is recorded as failed with a typed error; the run stays
// completed with its result, and Result returns it.
func TestCleanupHookFails(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	wf := sdk.New("cleanup-bad", func(ctx sdk.Context, in string) (string, error) { return "out:" + in, nil }).
		WithCleanup(func(ctx context.Context, c *sdk.Cleanup[string, string]) error {
			switch c.Input {
			case "panic":
				panic("hook exploded")
			case "slow":
				<-ctx.Done()
				<-stop // ignores its context: left behind
			}
			return errors.New("bucket unavailable")
		}, sdk.CleanupOptions{Timeout: 50 * time.Millisecond})
	e := newEnv(t, wf)
	ctx := e.ctx()
	for _, tc := range []struct{ in, typ, msg, kind string }{
		{"error", "", "bucket unavailable", sdk.CleanupReturnedError},
		{"panic", "CleanupPanicError", "hook exploded", sdk.CleanupPanicked},
		{"slow", "CleanupTimeoutError", "timeout", sdk.CleanupTimedOut},
	} {
		run, err := wf.Start(ctx, e.client, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := run.Result(ctx); err != nil || got != "out:"+tc.in {
			t.Fatalf("%s: Result = %q, %v; want the run's result", tc.in, got, err)
		}
		info, err := e.client.WaitDeactivated(ctx, run.ID())
		if err != nil || info.Status != world.RunStatusCompleted || info.Cleanup != world.CleanupFailed {
			t.Fatalf("%s: status %s cleanup %q, %v; want completed, failed", tc.in, info.Status, info.Cleanup, err)
		}
		d := cleanupEvent(t, e.events(run.ID()))
		if d.Error == nil || (tc.typ != "" && d.Error.Type != tc.typ) || !strings.Contains(d.Error.Message, tc.msg) {
			t.Fatalf("%s: recorded %+v; want type %q with %q", tc.in, d.Error, tc.typ, tc.msg)
		}
		var ce *sdk.CleanupError
		if err := e.client.CleanupErr(ctx, run.ID()); !errors.As(err, &ce) || ce.Kind != tc.kind || ce.RunID != run.ID() || !strings.Contains(ce.Message, tc.msg) {
			t.Fatalf("%s: CleanupErr = %v (%+v); want a *CleanupError of kind %q", tc.in, err, ce, tc.kind)
		}
		if tc.kind == sdk.CleanupReturnedError && (ce.Cause == nil || ce.Cause.Error() != "bucket unavailable") {
			t.Fatalf("%s: CleanupErr cause %v; want the hook's error", tc.in, ce.Cause)
		}
	}
}

// failCleanupOnce refuses the first run_cleaned_up with a transient error,
// as if the process died after the hook ran and before its outcome
// committed.
type failCleanupOnce struct {
	world.World
	failed atomic.Bool
}

func (f *failCleanupOnce) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	for _, ev := range p.Events {
		if _, ok := ev.Data.(*world.RunCleanedUp); ok && f.failed.CompareAndSwap(false, true) {
			return nil, errors.New("injected: connection reset")
		}
	}
	return f.World.Append(ctx, p)
}

// TestCleanupHookAtLeastOnce: a hook whose outcome could not be recorded
// runs again on the message's redelivery, and its outcome is recorded
// once; redeliveries after that do not call it again.
func TestCleanupHookAtLeastOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	wf := sdk.New("cleanup-again", func(ctx sdk.Context, in string) (string, error) { return in, nil }).
		WithCleanup(func(ctx context.Context, c *sdk.Cleanup[string, string]) error {
			calls.Add(1)
			return nil
		})
	e := newEnvWith(t, envOptions{world: func(lw *localworld.World) world.World { return &failCleanupOnce{World: lw} }}, wf)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("hook called %d times; want 2 (the first outcome was lost)", n)
	}
	cleanupEvent(t, e.events(run.ID()))
	// Another delivery of the run finds its cleanup recorded.
	if err := engine.Wake(ctx, e.lw, time.Now, run.ID(), "test-redeliver"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the worker polls every 50ms
	if n := calls.Load(); n != 2 {
		t.Fatalf("hook called %d times after a redelivery; want still 2", n)
	}
}

// TestCleanupBeforeParentWakes: a child run's cleanup hook has run by the
// time its parent is resumed with the child's result.
func TestCleanupBeforeParentWakes(t *testing.T) {
	t.Parallel()
	var cleaned atomic.Bool
	child := sdk.New("cleanup-child", func(ctx sdk.Context, in int) (int, error) { return in * 2, nil }).
		WithCleanup(func(ctx context.Context, c *sdk.Cleanup[int, int]) error {
			time.Sleep(100 * time.Millisecond) // a slow cleanup: the parent must wait for it
			cleaned.Store(true)
			return nil
		})
	seen := sdk.NewStep("cleanup-seen", func(ctx context.Context, n int) (bool, error) { return cleaned.Load(), nil })
	parent := sdk.New("cleanup-parent", func(ctx sdk.Context, in int) (bool, error) {
		n, err := child.Call(ctx, in)
		if err != nil {
			return false, err
		}
		return seen.Call(ctx, n)
	})
	e := newEnv(t, parent, child, seen)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 21)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || !got {
		t.Fatalf("parent saw the child's cleanup done: %v, %v; want true", got, err)
	}
}
