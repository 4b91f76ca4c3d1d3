package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

type childOut struct {
	ChildResult   int
	OriginalValue int
}

var doubler = sdk.New("doubler", func(ctx sdk.Context, n int) (childOut, error) {
	return childOut{ChildResult: n * 2, OriginalValue: n}, nil
})

func TestChildFromStep(t *testing.T) {
	t.Parallel()
	type spawned struct {
		ChildRunID  string
		ChildResult childOut
	}
	spawn := sdk.NewStep("spawn", func(ctx context.Context, n int) (spawned, error) {
		run, err := doubler.Start(ctx, nil, n)
		if err != nil {
			return spawned{}, err
		}
		out, err := run.Result(ctx)
		return spawned{ChildRunID: run.ID(), ChildResult: out}, err
	})
	type result struct {
		ParentInput int
		spawned
	}
	parent := sdk.New("spawnFromStep", func(ctx sdk.Context, n int) (result, error) {
		s, err := spawn.Call(ctx, n)
		return result{ParentInput: n, spawned: s}, err
	})
	e := newEnv(t, parent, spawn, doubler)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 42)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ParentInput != 42 || !strings.HasPrefix(got.ChildRunID, "wrun_") || got.ChildResult != (childOut{84, 42}) {
		t.Errorf("got %+v", got)
	}
	child, err := e.client.GetRun(ctx, got.ChildRunID)
	if err != nil {
		t.Fatal(err)
	}
	if child.Status != world.RunStatusCompleted || child.ParentRunID != run.ID() || child.RootRunID != run.ID() {
		t.Errorf("child row %+v", child)
	}
}

func TestChildFromWorkflow(t *testing.T) {
	t.Parallel()
	triple := sdk.New("triple", func(ctx sdk.Context, n int) (int, error) { return n * 3, nil })
	type result struct{ Processed int }
	parent := sdk.New("startFromWorkflow", func(ctx sdk.Context, n int) (result, error) {
		p, err := triple.Call(ctx, n)
		return result{Processed: p}, err
	})
	failing := sdk.New("failingChild", func(ctx sdk.Context, _ int) (int, error) {
		return 0, sdk.Fatal(errFailingChild)
	})
	parentOfFailing := sdk.New("parentOfFailing", func(ctx sdk.Context, _ int) (string, error) {
		_, err := failing.Call(ctx, 0)
		var rf *sdk.RunFailedError
		if !asErr(err, &rf) {
			return "no run error: " + errString(err), nil
		}
		return rf.Code + ": " + rf.Cause.Error(), nil
	})
	e := newEnv(t, parent, triple, failing, parentOfFailing)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 42)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got.Processed != 126 {
		t.Fatalf("got %+v, %v", got, err)
	}
	runs, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "triple"})
	if err != nil || len(runs.Runs) != 1 {
		t.Fatalf("child runs = %v, %v", runs, err)
	}
	if c := runs.Runs[0]; c.ParentRunID != run.ID() || c.RootRunID != run.ID() || c.Status != world.RunStatusCompleted {
		t.Errorf("child %+v", c)
	}
	run2, err := parentOfFailing.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run2.Result(ctx); err != nil || got != "USER_ERROR: child failed" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestFibonacci(t *testing.T) {
	t.Parallel()
	var fib *sdk.Workflow[int, int]
	fib = sdk.New("fibonacci", func(ctx sdk.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		vs, err := sdk.All(ctx, fib.Go(ctx, n-1), fib.Go(ctx, n-2))
		if err != nil {
			return 0, err
		}
		return vs[0] + vs[1], nil
	})
	e := newEnvWith(t, envOptions{concurrency: 8}, fib)
	ctx := e.ctx()
	run, err := fib.Start(ctx, e.client, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != 5 {
		t.Fatalf("fibonacci(5) = %d, %v", got, err)
	}
	// A three-level chain keeps the root.
	all, err := e.client.ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "fibonacci", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Runs) != 15 {
		t.Errorf("%d runs, want 15", len(all.Runs))
	}
	for _, r := range all.Runs {
		switch {
		case r.ID == run.ID():
			if r.ParentRunID != "" || r.RootRunID != "" {
				t.Errorf("root has lineage %+v", r)
			}
		case r.RootRunID != run.ID() || r.ParentRunID == "":
			t.Errorf("run %s: parent %q root %q", r.ID, r.ParentRunID, r.RootRunID)
		}
	}
}

// TestChildHookCannotBeForged: the hook on which a parent waits for its
// child's outcome is the engine's own: a client resuming it (with a forged
// outcome) is refused, and the parent gets the child's real result.
func TestChildHookCannotBeForged(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := sdk.NewStep("slow-child-step", func(ctx context.Context, n int) (int, error) {
		<-release
		return n * 2, nil
	})
	child := sdk.New("forge-child", func(ctx sdk.Context, n int) (int, error) { return slow.Call(ctx, n) })
	parent := sdk.New("forge-parent", func(ctx sdk.Context, n int) (int, error) { return child.Call(ctx, n) })
	e := newEnv(t, parent, child, slow)
	ctx := e.ctx()
	run, err := parent.Start(ctx, e.client, 21)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for token == "" {
		hooks, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hooks.Items {
			token = h.Token
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sdk.IsInternalToken(token) {
		t.Fatalf("the parent's hook %q is not recognised as the engine's own", token)
	}
	forged := map[string]any{"runId": "wrun_forged", "status": "completed", "output": 999}
	if _, err := e.client.ResumeHook(ctx, token, forged); !errors.Is(err, world.ErrInvalid) {
		t.Fatalf("ResumeHook of the child hook = %v; want it refused (ErrInvalid)", err)
	}
	close(release)
	if got, err := run.Result(ctx); err != nil || got != 42 {
		t.Fatalf("result %d, %v; want the child's 42", got, err)
	}
}
