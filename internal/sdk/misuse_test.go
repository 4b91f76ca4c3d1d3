package sdk_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var misuseEcho = sdk.NewStep("misuse-echo", func(ctx context.Context, s string) (string, error) { return s, nil })

// Workflows that misuse the API from a goroutine they start, one that
// panics, and a healthy one, for TestMisuseFailsOnlyItsRun.
var (
	// stepFromGoroutine calls a step from a goroutine while it waits for a
	// hook nobody resumes: only failing the run ends it.
	stepFromGoroutine = sdk.New("step-from-goroutine", func(ctx sdk.Context, _ int) (string, error) {
		go func() { _, _ = misuseEcho.Call(ctx, "from a goroutine") }()
		return sdk.NewHook[string](ctx, sdk.HookOptions{}).Receive(ctx)
	})
	// waitsForGoroutine blocks in sync.WaitGroup.Wait while its goroutine
	// calls a step: the workflow's own goroutine is running meanwhile.
	waitsForGoroutine = sdk.New("waits-for-goroutine", func(ctx sdk.Context, _ int) (string, error) {
		var wg sync.WaitGroup
		var out string
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ = misuseEcho.Call(ctx, "from a goroutine")
		}()
		wg.Wait()
		return misuseEcho.Call(ctx, out)
	})
	// sleepsInGoroutine sleeps from a goroutine after its first step.
	sleepsInGoroutine = sdk.New("sleeps-in-goroutine", func(ctx sdk.Context, _ int) (string, error) {
		if _, err := misuseEcho.Call(ctx, "first"); err != nil {
			return "", err
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = sdk.Sleep(ctx, 0)
		}()
		<-done
		return misuseEcho.Call(ctx, "second")
	})
	// lateGoroutine's goroutine calls a step after the session that ran the
	// workflow has ended (it waits for a hook nobody resumes).
	lateGoroutine = sdk.New("late-goroutine", func(ctx sdk.Context, _ int) (string, error) {
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, _ = misuseEcho.Call(ctx, "late")
		}()
		return sdk.NewHook[string](ctx, sdk.HookOptions{}).Receive(ctx)
	})
	// panicsAfterStep panics after a step.
	panicsAfterStep = sdk.New("panics-after-step", func(ctx sdk.Context, _ int) (string, error) {
		if _, err := misuseEcho.Call(ctx, "first"); err != nil {
			return "", err
		}
		panic("the order book is empty")
	})
	// healthy runs three steps.
	healthy = sdk.New("healthy", func(ctx sdk.Context, n int) (string, error) {
		out := ""
		for i := range n {
			s, err := misuseEcho.Call(ctx, string(rune('a'+i)))
			if err != nil {
				return "", err
			}
			out += s
		}
		return out, nil
	})
)

// TestMisuseFailsOnlyItsRun: a workflow that calls the workflow API from a
// goroutine it started fails with WORKFLOW_API_MISUSE and a message saying
// what to do instead, one that panics fails with USER_ERROR; the worker
// process survives and a healthy run beside them completes.
func TestMisuseFailsOnlyItsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, misuseEcho, stepFromGoroutine, waitsForGoroutine, sleepsInGoroutine, lateGoroutine, panicsAfterStep, healthy)
	for _, tc := range []struct {
		wf   *sdk.Workflow[int, string]
		code string
		want []string
	}{
		{stepFromGoroutine, world.CodeWorkflowAPIMisuse, []string{`step "misuse-echo" was called from a goroutine the workflow function started`, "Step.Go"}},
		{waitsForGoroutine, world.CodeWorkflowAPIMisuse, []string{`step "misuse-echo" was called from a goroutine`}},
		{sleepsInGoroutine, world.CodeWorkflowAPIMisuse, []string{"a sleep or timer was called from a goroutine"}},
		{lateGoroutine, world.CodeWorkflowAPIMisuse, []string{`step "misuse-echo" was called from a goroutine`}},
		{panicsAfterStep, world.CodeUserError, []string{"workflow panicked", "the order book is empty"}},
		{healthy, "", nil},
	} {
		t.Run(tc.wf.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := tc.wf.Start(ctx, e.client, 3)
			if err != nil {
				t.Fatal(err)
			}
			out, err := run.Result(ctx)
			if tc.code == "" {
				if err != nil || out != "abc" {
					t.Fatalf("healthy run: %q, %v", out, err)
				}
				return
			}
			rf := mustAs[*sdk.RunFailedError](t, err)
			if rf.Code != tc.code {
				t.Fatalf("run failed with %s, want %s: %v", rf.Code, tc.code, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if evs := e.events(run.ID()); countEvents(evs, world.EventRunFailed) != 1 {
				t.Errorf("%d run_failed events, want 1", countEvents(evs, world.EventRunFailed))
			}
		})
	}
}
