package sdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestSlowCompensationKeepsItsLease: a compensation whose body runs five
// times the step lease (a slow refund API, no timeout), with two workers on
// one store, keeps its lease while it runs, as a step does: no worker takes
// it over and nothing cancels it, so its body runs once, to its end, and it
// is recorded by one comp_started and one comp_succeeded. For a workflow
// that compensates itself (Compensate), one compensated after its failure
// (WithCompensateOnFailure) and one cancelled with CancelCompensating (a
// compensation's lease watch does not stop it for its run's cancellation).
func TestSlowCompensationKeepsItsLease(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"explicit", "on failure", "cancelled"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			testSlowCompensation(t, how)
		})
	}
}

func testSlowCompensation(t *testing.T, how string) {
	const lease, body = 300 * time.Millisecond, 1500 * time.Millisecond
	prefix := "sl-" + strings.ReplaceAll(how, " ", "-") + "-"
	var calls, cancelled atomic.Int32
	undo := sdk.NewStep(prefix+"refund", func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
		calls.Add(1)
		select {
		case <-time.After(body):
			return struct{}{}, nil
		case <-ctx.Done():
			cancelled.Add(1)
			return struct{}{}, ctx.Err()
		}
	})
	charge := sdk.WithCompensation(sdk.NewStep(prefix+"charge", func(ctx context.Context, in string) (string, error) {
		return "charged " + in, nil
	}), undo)
	ship := sdk.NewStep(prefix+"ship", func(ctx context.Context, in string) (string, error) {
		return "", sdk.Fatal(errors.New("out of stock"))
	})
	saga := sdk.New(prefix+"saga", func(ctx sdk.Context, in string) (string, error) {
		if _, err := charge.Call(ctx, in); err != nil {
			return "", err
		}
		if how == "cancelled" {
			return "", sdk.Sleep(ctx, time.Hour)
		}
		if _, err := ship.Call(ctx, in); err != nil {
			if how == "on failure" {
				return "", err
			}
			return "rolled back", sdk.Compensate(ctx)
		}
		return "done", nil
	})
	if how == "on failure" {
		saga = saga.WithCompensateOnFailure()
	}
	e := newEnvWith(t, envOptions{workers: 2, engine: sdk.EngineOptions{StepLeaseTTL: lease}}, undo, charge, ship, saga)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "order")
	if err != nil {
		t.Fatal(err)
	}
	if how == "cancelled" {
		e.waitEvent(run.ID(), world.EventWaitCreated)
		if err := run.Cancel(ctx, "changed my mind", sdk.CancelCompensating()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run.Result(ctx)
	switch {
	case how == "on failure" && (err == nil || !strings.Contains(err.Error(), "out of stock")):
		t.Fatalf("saga = %q, %v, want the failure of ship", out, err)
	case how == "cancelled" && !errors.Is(err, sdk.ErrRunCancelled):
		t.Fatalf("saga = %q, %v, want ErrRunCancelled", out, err)
	case how == "explicit" && (err != nil || out != "rolled back"):
		t.Fatalf("saga = %q, %v", out, err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Compensations; c.Succeeded != 1 || c.Failed != 0 || c.Status() != world.StepStatusCompensated {
		t.Errorf("Compensations = %+v", c)
	}
	if n, m := calls.Load(), cancelled.Load(); n != 1 || m != 0 {
		t.Errorf("the compensation's body ran %d times (%d cancelled), want once, uncancelled", n, m)
	}
	if got, want := compTrail(e.events(run.ID())), []string{"comp_started " + prefix + "charge", "comp_succeeded " + prefix + "charge"}; !slices.Equal(got, want) {
		t.Errorf("comp trail = %q, want %q", got, want)
	}
}
