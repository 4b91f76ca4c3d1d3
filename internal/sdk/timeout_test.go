package sdk_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// slowFirst is a step whose first attempt outlasts its timeout: cooperative
// ones return when their context ends, the other ignores it until release
// is closed.
func slowFirst(name string, cooperative bool, release <-chan struct{}) *sdk.Step[string, string] {
	return sdk.NewStep(name, func(ctx context.Context, in string) (string, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		if m.Attempt > 1 {
			return in + " on attempt " + itoa(m.Attempt), nil
		}
		if cooperative {
			<-ctx.Done()
			return "", ctx.Err()
		}
		<-release
		return "too late", nil
	}, sdk.StepOptions{Timeout: 50 * time.Millisecond, MaxRetries: 5, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestStepTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		cooperative bool
	}{
		{"returns when cancelled", true},
		{"ignores its context", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			step := slowFirst("slow-"+strings.ReplaceAll(tc.name, " ", "-"), tc.cooperative, release)
			wf := sdk.New("timeout-"+step.Name(), func(ctx sdk.Context, in string) (string, error) {
				return step.Call(ctx, in)
			})
			e := newEnv(t, wf, step)
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, "done")
			if err != nil {
				t.Fatal(err)
			}
			// The timeout is real time, and on a loaded machine a later
			// attempt can outlast 50 ms before it runs: the result is a later
			// attempt's, and every attempt before it is recorded as a timeout
			// (never the first attempt's late "too late").
			got, err := run.Result(ctx)
			attempt, ok := strings.CutPrefix(got, "done on attempt ")
			if err != nil || !ok || attempt == "1" {
				t.Fatalf("result = %q, %v; want a later attempt's", got, err)
			}
			var retrying *world.StepRetrying
			n := 0
			for _, ev := range e.events(run.ID()) {
				if d, ok := ev.Data.(*world.StepRetrying); ok {
					retrying = d
					n++
					if d.Error == nil || d.Error.Code != world.CodeStepTimeout {
						t.Fatalf("step_retrying = %+v; want each failed attempt recorded as %s", d, world.CodeStepTimeout)
					}
				}
			}
			if retrying == nil || itoa(n+1) != attempt {
				t.Fatalf("%d step_retrying before attempt %s; want one per timed-out attempt", n, attempt)
			}
			if !strings.Contains(retrying.Error.Message, "timed out after 50ms") {
				t.Errorf("timeout message = %q", retrying.Error.Message)
			}
		})
	}
}

func TestStepTimeoutOnLastAttemptFailsRun(t *testing.T) {
	t.Parallel()
	hang := sdk.NewStep("hang", func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, sdk.StepOptions{Timeout: 30 * time.Millisecond, MaxRetries: sdk.NoRetries})
	var seen error
	wf := sdk.New("hang-once", func(ctx sdk.Context, in string) (string, error) {
		_, err := hang.Call(ctx, in)
		seen = err
		return "", err
	})
	e := newEnv(t, wf, hang)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	var failed *sdk.RunFailedError
	if !errors.As(err, &failed) || failed.Code != world.CodeStepTimeout {
		t.Fatalf("result error = %v; want a run failed with %s", err, world.CodeStepTimeout)
	}
	if te, ok := sdk.StepTimeoutOf(err); !ok || te.Step != "hang" || te.Attempt != 1 || te.Timeout != 30*time.Millisecond {
		t.Fatalf("result error = %#v; want a step timeout naming the step, attempt and timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a step timeout should match context.DeadlineExceeded: %v", err)
	}
	if _, ok := sdk.StepTimeoutOf(seen); !ok {
		t.Errorf("the workflow saw %v; want a step timeout", seen)
	}
}

func TestNegativeStepTimeoutRefused(t *testing.T) {
	t.Parallel()
	s := sdk.NewStep("negative", func(ctx context.Context, _ int) (int, error) { return 0, nil },
		sdk.StepOptions{Timeout: -time.Second})
	err := sdk.NewRegistry().Register(s)
	if err == nil || !strings.Contains(err.Error(), "negative StepOptions.Timeout") {
		t.Fatalf("Register = %v; want the negative timeout refused", err)
	}
}
