package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestRunsExportCLI: runs export writes the runs not ended, one history
// file each, which skeintest reads and checks against the code (compatible
// with the code that recorded them, not with a changed step); -status all
// and run IDs print to stdout exactly what runs events prints; it works
// while a worker holds the store; bad flags are usage errors.
func TestRunsExportCLI(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1 := evolve(pack)
	var open, done string
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		r, err := v1.Start(ctx, c, "export/done")
		if err != nil {
			t.Fatal(err)
		}
		done = r.ID()
		waitHook(ctx, t, c, "export/done")
		if _, err := c.ResumeHook(ctx, "export/done", "ok"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Result(ctx); err != nil {
			t.Fatal(err)
		}
		r, err = v1.Start(ctx, c, "export/open")
		if err != nil {
			t.Fatal(err)
		}
		open = r.ID()
		waitHook(ctx, t, c, "export/open")
	})
	// A process holding the store, as a worker would: export reads it anyway.
	holder, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()

	dir := filepath.Join(t.TempDir(), "testdata", "histories")
	cli("-db", db, "runs", "export", "-out", dir).expect(t, 0, filepath.Join(dir, open+".jsonl"), "evolve  running", "exported 1 runs to "+dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 {
		t.Fatalf("files %v; want the open run's only", files)
	}
	rep, err := skeintest.CheckHistoryFile(workflow.NewRegistry().MustRegister(v1, pack), files[0])
	if err != nil || len(rep.Runs) != 1 || !rep.Compatible() {
		t.Fatalf("v1: %v %v", rep, err)
	}
	rep, err = skeintest.CheckHistoryFile(workflow.NewRegistry().MustRegister(evolve(label), label), files[0])
	if err != nil || rep.Compatible() || !strings.Contains(rep.String(), `asks for step "label"`) {
		t.Fatalf("changed step: %v %v", rep, err)
	}

	all := cli("-db", db, "runs", "export", "-status", "all")
	all.expect(t, 0)
	hs, err := skeintest.ReadHistories(strings.NewReader(all.out), "stdout")
	if err != nil || len(hs) != 2 {
		t.Fatalf("-status all: %d histories, %v", len(hs), err)
	}
	one, events := cli("-db", db, "runs", "export", done), cli("-db", db, "runs", "events", "-show-tokens", done)
	if one.code != 0 || one.out != events.out || one.out == "" {
		t.Errorf("export %s printed\n%s\nruns events printed\n%s", done, one.out, events.out)
	}
	cli("-db", db, "runs", "export", "-status", "done").expect(t, 2, `unknown status "done"`)
	cli("-db", db, "runs", "export", "nope").expect(t, 2, `"nope" is not a run ID`)
	cli("-db", db, "runs", "export", "-workflow", "other", "-out", dir).expect(t, 0, "no runs to export")
	if _, err := os.Stat(filepath.Join(dir, done+".jsonl")); err == nil {
		t.Error("a finished run was exported without -status")
	}
}

func waitHook(ctx context.Context, t *testing.T, c *client.Client, token string) {
	t.Helper()
	for {
		if _, err := c.GetHookByToken(ctx, token); err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the hook %s never appeared", token)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heldAgain lists the running runs again as held, as a listing sees a run
// held between the listing of one status and the next.
type heldAgain struct{ *localworld.World }

func (h heldAgain) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	if p.Status == world.RunStatusHeld {
		q := *p
		q.Status = world.RunStatusRunning
		return h.World.ListRuns(ctx, &q)
	}
	return h.World.ListRuns(ctx, p)
}

// TestExportListsARunOnce: a run listed under two statuses is exported
// once.
func TestExportListsARunOnce(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1 := evolve(pack)
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		if _, err := v1.Start(ctx, c, "once/1"); err != nil {
			t.Fatal(err)
		}
		waitHook(ctx, t, c, "once/1")
	})
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	q := exportQuery{status: "running,held"}
	statuses, err := q.statuses()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := listRunIDs(context.Background(), heldAgain{w}, q, statuses)
	if err != nil || len(ids) != 1 {
		t.Fatalf("ids %v, %v; want the one run once", ids, err)
	}
}
