package sdk_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// approvalWithTimeout is the natural "approval with a timeout" code: the
// hook's next payload raced against a timer.
func approvalWithTimeout(ctx sdk.Context, token string) (string, error) {
	h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: token})
	f := h.Next(ctx)
	timer := sdk.NewTimer(ctx, time.Hour)
	if sdk.Select(ctx, f, timer) == 1 {
		return "timeout", nil
	}
	p, err := f.Get(ctx)
	if err != nil {
		return "", err
	}
	return p.Message, nil
}

var approvalSelect = sdk.New("approvalSelect", approvalWithTimeout)

// TestHookConflictInSelect: a second run racing a hook whose token the
// first holds against a timer fails with *HookConflictError, not a replay
// divergence (the hook_conflict and the wait_created share a commit), and
// its log replays to the same failure.
func TestHookConflictInSelect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, approvalSelect)
	ctx := e.ctx()
	token := "select-conflict-" + t.Name()
	run1, err := approvalSelect.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "run 1's hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
	run2, err := approvalSelect.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run2.Result(ctx)
	rf := mustAs[*sdk.RunFailedError](t, err)
	hc := mustAs[*sdk.HookConflictError](t, err)
	if rf.Code != world.CodeUserError || hc.ConflictingRunID != run1.ID() || hc.Token != token {
		t.Errorf("run 2: %v (code %s)", err, rf.Code)
	}
	rep, err := sdk.CheckLog(e.reg, e.events(run2.ID()))
	if err != nil || rep.Divergence != nil || rep.Status != world.RunStatusFailed {
		t.Errorf("CheckLog = %+v, %v", rep, err)
	}
	if _, err := e.client.ResumeHook(ctx, token, hookPayload{Message: "ok"}); err != nil {
		t.Fatal(err)
	}
	if got, err := run1.Result(ctx); err != nil || got != "ok" {
		t.Fatalf("run 1 = %q, %v", got, err)
	}
}

// TestHookConflictInSelectCompensates: a saga charging a card before the
// approval compensates the charge when its token is taken.
func TestHookConflictInSelectCompensates(t *testing.T) {
	t.Parallel()
	j := &journal{}
	refund := sdk.NewStep("hcs-refund", func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
		j.add("refund " + c.Result)
		return struct{}{}, nil
	})
	charge := sdk.WithCompensation(sdk.NewStep("hcs-charge", func(ctx context.Context, in string) (string, error) {
		return "ch_" + in, nil
	}), refund)
	saga := sdk.New("hcs-saga", func(ctx sdk.Context, token string) (string, error) {
		if _, err := charge.Call(ctx, token); err != nil {
			return "", err
		}
		return approvalWithTimeout(ctx, token)
	}).WithCompensateOnFailure()
	e := newEnv(t, refund, charge, saga, approvalSelect)
	ctx := e.ctx()
	token := "saga-conflict-" + t.Name()
	holder, err := approvalSelect.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the holder's hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
	run, err := saga.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	mustAs[*sdk.HookConflictError](t, err)
	if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	if got, want := j.lines(), []string{"refund ch_" + token}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	if _, err := e.client.ResumeHook(ctx, token, hookPayload{Message: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Result(ctx); err != nil {
		t.Fatal(err)
	}
}
