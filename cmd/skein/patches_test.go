package main

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestPatchesCheckCLI: a run of v1 packs and waits on its hook; v2 adds a
// label step under a patch before the pack. While the old run is open,
// patches check names it and exits 1; once it completed (on its old
// path), the patch can be retired.
func TestPatchesCheckCLI(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1 := evolve(pack)
	v2 := workflow.New("evolve", func(ctx workflow.Context, token string) (string, error) {
		if workflow.Patched(ctx, "add-label") {
			if _, err := label.Call(ctx, token); err != nil {
				return "", err
			}
		}
		s, err := pack.Call(ctx, token)
		if err != nil {
			return "", err
		}
		v, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
		return s + " " + v, err
	})
	tok := "patch/1"
	var id string
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		r, err := v1.Start(ctx, c, tok)
		if err != nil {
			t.Fatal(err)
		}
		id = r.ID()
		for {
			if _, err := c.GetHookByToken(ctx, tok); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the hook never appeared")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	args := []string{"-db", db, "patches", "check", "evolve", "add-label"}
	cli(args...).expect(t, 1, `patch "add-label" of workflow "evolve" is still needed: 1 unfinished run lacks its marker`, id)
	// A workflow name without runs (here, misspelled) is not retirable: the
	// check names the workflows that have runs.
	r := cli("-db", db, "patches", "check", "Evolve", "add-label")
	r.expect(t, 1, `no run of workflow "Evolve" exists in the store`, "workflows with runs: evolve")
	if strings.Contains(r.out+r.err, "can be retired") {
		t.Errorf("a workflow without runs was called retirable:\n%s%s", r.out, r.err)
	}

	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry().MustRegister(v2, pack, label)
	worker, err := worker.New(worker.Config{World: w, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	c := worker.Client()
	if _, err := c.ResumeHook(ctx, tok, "ok"); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, c, id, world.RunStatusCompleted)
	var got string
	if err := c.Result(ctx, id, &got); err != nil || got != "packed ok" {
		t.Fatalf("old run: %q, %v; want its old path's result", got, err)
	}
	stop()
	<-stopped
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cli(args...).expect(t, 0, `patch "add-label" of workflow "evolve" can be retired`)
}
