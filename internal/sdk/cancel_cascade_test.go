package sdk_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	workflow "github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestCancelCascadesToChildren: cancelling a parent run cancels its
// unfinished child runs, and theirs (their hooks go with them); a child
// that had completed stays completed; cancelling the parent again changes
// nothing.
func TestCancelCascadesToChildren(t *testing.T) {
	t.Parallel()
	grandchild := workflow.New("cascade-grandchild", func(ctx workflow.Context, token string) (string, error) {
		return workflow.NewHook[string](ctx, workflow.HookOptions{Token: token + "/gc"}).Receive(ctx)
	})
	child := workflow.New("cascade-child", func(ctx workflow.Context, token string) (string, error) {
		f := grandchild.Go(ctx, token)
		s, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
		if err != nil {
			return "", err
		}
		_, err = f.Get(ctx)
		return s, err
	})
	quick := workflow.New("cascade-quick", func(ctx workflow.Context, n int) (int, error) { return n, nil })
	parent := workflow.New("cascade-parent", func(ctx workflow.Context, token string) (string, error) {
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
	if _, err := run.Result(ctx); !errors.Is(err, workflow.ErrRunCancelled) {
		t.Fatalf("parent: %v", err)
	}
	status := func(name string) map[world.RunStatus]int {
		page, err := e.client.ListRuns(ctx, workflow.ListRunsOptions{WorkflowName: name})
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
	page, err := e.client.ListRuns(ctx, workflow.ListRunsOptions{WorkflowName: "cascade-child"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("children: %v, %v", page, err)
	}
	if n := countEvents(e.events(page.Runs[0].ID), world.EventRunCancelled); n != 1 {
		t.Errorf("child has %d run_cancelled events", n)
	}
}
