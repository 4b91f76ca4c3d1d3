package sdk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestStepLateResultIsATimeout: an attempt whose function waits for its
// context's cancellation and then returns a result within the grace
// period has still run past its Timeout: it fails with a
// step timeout and its result is discarded. With a retry left the
// next attempt's result is the step's; without, the run fails with
// STEP_TIMEOUT.
func TestStepLateResultIsATimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		retries int
		want    string // the run's result; "" for a failed run
	}{
		// The timeout is real time: a second, twenty times what a later
		// attempt (which returns at once) takes on a loaded machine, and the
		// late result comes 100 ms after it, a tenth of the grace period.
		// "retried" still has retries to spare and takes any later
		// attempt's result.
		{"retried", 5, "attempt "},
		{"last attempt", sdk.NoRetries, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			late := sdk.NewStep("late-"+tc.name, func(ctx context.Context, _ int) (string, error) {
				if m, _ := sdk.StepMetadataFrom(ctx); m.Attempt > 1 {
					return "attempt " + itoa(m.Attempt), nil
				}
				<-ctx.Done()
				time.Sleep(100 * time.Millisecond) // within the grace period
				return "late", nil
			}, sdk.StepOptions{Timeout: time.Second, MaxRetries: tc.retries, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
			wf := sdk.New("late-wf-"+tc.name, func(ctx sdk.Context, n int) (string, error) {
				return late.Call(ctx, n)
			})
			e := newEnv(t, wf, late)
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, 4)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if tc.want != "" {
				if err != nil || !strings.HasPrefix(got, tc.want) || got == "attempt 1" {
					t.Fatalf("result %q, %v; want %q: the late result discarded, the step retried", got, err, tc.want)
				}
				var timedOut bool
				for _, ev := range e.events(run.ID()) {
					if d, ok := ev.Data.(*world.StepRetrying); ok && d.Error != nil && d.Error.Code == world.CodeStepTimeout {
						timedOut = true
					}
				}
				if !timedOut {
					t.Fatalf("no step_retrying recorded the first attempt as %s", world.CodeStepTimeout)
				}
				return
			}
			if te, ok := sdk.StepTimeoutOf(err); !ok || te.Attempt != 1 || got != "" {
				t.Fatalf("result %q, %v; want the run failed with a step timeout", got, err)
			}
		})
	}
}
