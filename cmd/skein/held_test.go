package main

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// evolve is deployed in two versions that call different steps before
// waiting on a hook: runs v1 started are held once v2 replays them.
var (
	pack  = workflow.NewStep("pack", func(context.Context, string) (string, error) { return "packed", nil })
	label = workflow.NewStep("label", func(context.Context, string) (string, error) { return "labelled", nil })
)

func evolve(step *workflow.Step[string, string]) *workflow.Workflow[string, string] {
	return workflow.New("evolve", func(ctx workflow.Context, token string) (string, error) {
		s, err := step.Call(ctx, token)
		if err != nil {
			return "", err
		}
		v, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
		return s + " " + v, err
	})
}

// deployed opens the store at db, runs a worker of the given workflow
// and step on it while fn runs, then closes it.
func deployed(t *testing.T, db string, wf *workflow.Workflow[string, string], step *workflow.Step[string, string], fn func(ctx context.Context, c *client.Client)) {
	t.Helper()
	deployedDefs(t, db, fn, step, wf)
}

// deployedDefs is deployed with the definitions given.
func deployedDefs(t *testing.T, db string, fn func(ctx context.Context, c *client.Client), defs ...workflow.Definition) {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry().MustRegister(defs...)
	worker, err := worker.New(worker.Config{World: w, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	fn(ctx, worker.Client())
	stop()
	<-stopped
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func waitStatus(ctx context.Context, t *testing.T, c *client.Client, id string, want world.RunStatus) {
	t.Helper()
	for {
		if s, err := statusOfID(ctx, c, id); err == nil && s == want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s never became %s", id, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHeldRunCLI: runs that a bad deploy holds are listed and shown with
// their divergence; after the old code is back, runs retry resumes one to
// completion; runs fail ends the other.
func TestHeldRunCLI(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1, v2 := evolve(pack), evolve(label)
	var ids []string
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		for _, tok := range []string{"ship/1", "ship/2"} {
			r, err := v1.Start(ctx, c, tok)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := c.GetHookByToken(ctx, tok); err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("the hook never appeared")
				}
				time.Sleep(5 * time.Millisecond)
			}
			ids = append(ids, r.ID())
		}
	})
	// The bad deploy: the payloads wake the runs, whose replay diverges.
	deployed(t, db, v2, label, func(ctx context.Context, c *client.Client) {
		for i, tok := range []string{"ship/1", "ship/2"} {
			if _, err := c.ResumeHook(ctx, tok, "ok"); err != nil {
				t.Fatal(err)
			}
			waitStatus(ctx, t, c, ids[i], world.RunStatusHeld)
		}
	})
	retried, failed := ids[0], ids[1]
	args := []string{"-db", db}
	cli(append(args, "runs", "list")...).expect(t, 0, "held", "Held: the code replaying these runs diverges",
		retried, failed, "REPLAY_DIVERGENCE since", "attempt 1", `step "pack"`, `step "label"`)
	cli(append(args, "runs", "list", "-status", "held")...).expect(t, 0, retried, failed)
	cli(append(args, "runs", "show", retried)...).expect(t, 0, "Status     held", "Held       REPLAY_DIVERGENCE since",
		"next retry in", "Diverged   replay divergence at event", `step "label"`)

	cli(append(args, "runs", "retry", retried)...).expect(t, 0, "run "+retried+" will be replayed")
	cli(append(args, "runs", "fail", failed, "-reason", "v1 is gone")...).expect(t, 0, "failed run "+failed)
	cli(append(args, "runs", "show", failed)...).expect(t, 0, "Status     failed", "REPLAY_DIVERGENCE: failed on request: v1 is gone")
	// The fix: v1 again. The retry queued above resumes the held run.
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		var out string
		if err := c.Result(ctx, retried, &out); err != nil || out != "packed ok" {
			t.Fatalf("result %q, %v; want the run resumed", out, err)
		}
	})
	cli(append(args, "runs", "show", retried)...).expect(t, 0, "Status     completed")
	cli(append(args, "runs", "retry", retried)...).expect(t, 1, "is completed and at rest, not held")
	cli(append(args, "runs", "fail", failed)...).expect(t, 1, "has already failed")
}
