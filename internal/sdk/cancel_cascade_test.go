package sdk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestCancelCascadesToChildren: cancelling a parent run cancels its
// unfinished child runs, and theirs (their hooks go with them); a child
// that had completed stays completed; cancelling the parent again changes
// nothing.
func TestCancelCascadesToChildren(t *testing.T) {
	t.Parallel()
	grandchild := sdk.New("cascade-grandchild", func(ctx sdk.Context, token string) (string, error) {
		return sdk.NewHook[string](ctx, sdk.HookOptions{Token: token + "/gc"}).Receive(ctx)
	})
	child := sdk.New("cascade-child", func(ctx sdk.Context, token string) (string, error) {
		f := grandchild.Go(ctx, token)
		s, err := sdk.NewHook[string](ctx, sdk.HookOptions{Token: token}).Receive(ctx)
		if err != nil {
			return "", err
		}
		_, err = f.Get(ctx)
		return s, err
	})
	quick := sdk.New("cascade-quick", func(ctx sdk.Context, n int) (int, error) { return n, nil })
	parent := sdk.New("cascade-parent", func(ctx sdk.Context, token string) (string, error) {
		if _, err := quick.Call(ctx, 1); err != nil {
			return "", err
		}
		return child.Call(ctx, token)
	})
	e := newEnv(t, grandchild, child, quick, parent)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, "cascade/1")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the grandchild's hook", func() bool {
		_, err := e.client.GetHookByToken(ctx, "cascade/1/gc")
		return err == nil
	})
	if err := run.Cancel(ctx, "user cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("parent: %v", err)
	}
	status := func(name string) map[world.RunStatus]int {
		page, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: name})
		if err != nil {
			t.Fatal(err)
		}
		out := map[world.RunStatus]int{}
		for _, r := range page.Runs {
			out[r.Status]++
			if r.Status == world.RunStatusCancelled && !strings.Contains(r.CancelReason, "was cancelled") {
				t.Errorf("run %s cancelled with reason %q", r.ID, r.CancelReason)
			}
		}
		return out
	}
	waitFor(t, "the children cancelled", func() bool {
		return status("cascade-child")[world.RunStatusCancelled] == 1 && status("cascade-grandchild")[world.RunStatusCancelled] == 1
	})
	if got := status("cascade-quick"); got[world.RunStatusCompleted] != 1 {
		t.Errorf("quick child: %v", got)
	}
	for _, tok := range []string{"cascade/1", "cascade/1/gc"} {
		if _, err := e.client.GetHookByToken(ctx, tok); err == nil {
			t.Errorf("hook %s still active", tok)
		}
	}
	if err := run.Cancel(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	page, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "cascade-child"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("children: %v, %v", page, err)
	}
	if n := countEvents(e.events(page.Runs[0].ID), world.EventRunCancelled); n != 1 {
		t.Errorf("child has %d run_cancelled events", n)
	}
}
