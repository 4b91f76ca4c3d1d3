package sdk_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestUnregisteredStepHoldsTheRun: a workflow calling a step its Registry
// lacks (a deploy that forgot to register it) holds the run with
// DEPLOYMENT_MISMATCH and a message naming the step; nothing fails and no
// compensation starts.
func TestUnregisteredStepHoldsTheRun(t *testing.T) {
	t.Parallel()
	j := &journal{}
	refund := sdk.NewStep("usr-refund", func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
		j.add("refund")
		return struct{}{}, nil
	})
	charge := sdk.WithCompensation(sdk.NewStep("usr-charge", func(ctx context.Context, in string) (string, error) {
		return "ch", nil
	}), refund)
	ship := sdk.NewStep("usr-ship", func(ctx context.Context, in string) (string, error) { return "shipped", nil })
	saga := sdk.New("usr-saga", func(ctx sdk.Context, in string) (string, error) {
		if _, err := charge.Call(ctx, in); err != nil {
			return "", err
		}
		return ship.Call(ctx, in)
	}).WithCompensateOnFailure()
	e := newEnv(t, refund, charge, saga) // ship forgotten
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "order")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hold", func() bool { st, _ := statusOf(ctx, run); return st == world.RunStatusHeld })
	info, err := run.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Hold == nil || info.Hold.Code != world.CodeDeploymentMismatch || info.Err != nil || info.ErrorCode != "" {
		t.Fatalf("run %s hold %+v err %v, want held by DEPLOYMENT_MISMATCH", info.Status, info.Hold, info.Err)
	}
	if msg := info.Hold.Err.Error(); !strings.Contains(msg, `step "usr-ship" is not registered`) || !strings.Contains(msg, "held") {
		t.Errorf("hold error %q does not say the step is not registered and the run held", msg)
	}
	for _, ev := range e.events(run.ID()) {
		switch ev.Type() {
		case world.EventStepFailed, world.EventRunFailed, world.EventCompStarted:
			t.Errorf("the log has %s", ev.Type())
		}
	}
	if got := j.lines(); len(got) != 0 {
		t.Errorf("compensations ran: %q", got)
	}
}
