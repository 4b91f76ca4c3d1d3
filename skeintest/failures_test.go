package skeintest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// fatalTB is a TB whose Fatalf records the failure and ends the goroutine,
// as testing.T's does, without failing the real test.
type fatalTB struct {
	*testing.T
	mu      sync.Mutex
	failure string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failure = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Errorf(format string, args ...any) { f.Fatalf(format, args...) }

// failure runs body on its own goroutine and returns the failure it
// reported ("" if none).
func failure(t *testing.T, body func(tb testing.TB)) string {
	tb := &fatalTB{T: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(tb)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failure
}

// waiter waits on a hook that nobody resumes.
var waiter = workflow.New("waiter", func(ctx workflow.Context, token string) (string, error) {
	return workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
})

var (
	firstWay = workflow.NewStep("first-way", func(context.Context, struct{}) (string, error) { return "a", nil })
	otherWay = workflow.NewStep("other-way", func(context.Context, struct{}) (string, error) { return "b", nil })
)

// fickle asks for another step after its first execution: replay diverges
// after the sleep, and the run is held.
func fickle(calls *atomic.Int32) *workflow.Workflow[struct{}, string] {
	return workflow.New("fickle", func(ctx workflow.Context, in struct{}) (string, error) {
		step := firstWay
		if calls.Add(1) > 1 {
			step = otherWay
		}
		out, err := step.Call(ctx, in)
		if err != nil {
			return "", err
		}
		return out, workflow.Sleep(ctx, time.Minute)
	})
}

func TestFailuresSayWhatIsWrong(t *testing.T) {
	t.Parallel()
	// A wait bound that a busy machine keeps: the cases that time out
	// first wait for their run to suspend, so the bound only decides how
	// long the failing wait takes.
	quick := skeintest.WithTimeout(2 * time.Second)
	for _, c := range []struct {
		name string
		body func(tb testing.TB)
		want []string
	}{
		{"a run waiting for a hook nobody resumes", func(tb testing.TB) {
			env := skeintest.New(tb, workflow.NewRegistry().MustRegister(waiter), quick)
			run, _ := waiter.Start(env.Context(), env.Client(), "nobody/1")
			env.WaitSuspended(run.ID())
			skeintest.Result(env, run)
		}, []string{"did not end within 2s", `waiting for hook "nobody/1"`, "Env.ResumeHook"}},
		{"a sleeping run in manual time", func(tb testing.TB) {
			env := skeintest.New(tb, twiceRegistry(t), quick, skeintest.WithManualTime(), skeintest.WithStartTime(start))
			run, _ := twice.Start(env.Context(), env.Client(), struct{}{})
			env.WaitSuspended(run.ID())
			env.Wait(run.ID())
		}, []string{"did not end", "sleep until 2030-01-01T01:00:00.000Z", "the clock is manual: call Env.Advance"}},
		{"a held run", func(tb testing.TB) {
			var calls atomic.Int32
			wf := fickle(&calls)
			// The environment replays at every wake-up: it diverges.
			env := skeintest.New(tb, workflow.NewRegistry().MustRegister(wf, firstWay, otherWay))
			run, _ := wf.Start(env.Context(), env.Client(), struct{}{})
			env.Wait(run.ID())
		}, []string{"is held", "REPLAY_DIVERGENCE"}},
		{"a run that ends without suspending", func(tb testing.TB) {
			napless := workflow.New("napless", func(workflow.Context, int) (int, error) { return 1, nil })
			env := skeintest.New(tb, workflow.NewRegistry().MustRegister(napless))
			run, _ := napless.Start(env.Context(), env.Client(), 0)
			env.WaitSuspended(run.ID())
		}, []string{"WaitSuspended", "ended (completed) without suspending"}},
		{"a stub of a step the registry lacks", func(tb testing.TB) {
			ghost := workflow.NewStep("ghost", func(context.Context, int) (int, error) { return 0, nil })
			skeintest.New(tb, twiceRegistry(t), skeintest.StubStep(ghost, func(context.Context, int) (int, error) { return 1, nil }))
		}, []string{"stub", `step "ghost" is not registered`}},
		{"a clock going back", func(tb testing.TB) {
			skeintest.New(tb, twiceRegistry(t)).Advance(-time.Second)
		}, []string{"Advance(-1s): the clock does not go back"}},
		{"a hook nobody holds", func(tb testing.TB) {
			skeintest.New(tb, twiceRegistry(t)).ResumeHook("no/such", "x")
		}, []string{`ResumeHook("no/such")`, "not found"}},
		{"events out of order", func(tb testing.TB) {
			env := skeintest.New(tb, twiceRegistry(t))
			run, _ := twice.Start(env.Context(), env.Client(), struct{}{})
			env.Wait(run.ID())
			env.ExpectEvents(run.ID(), "run_completed", "wait_created")
		}, []string{"no wait_created after the events matching [run_completed]", "the log:", "run_created", "twice"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := failure(t, c.body)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("failure %q lacks %q", got, w)
				}
			}
		})
	}
}
