package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinflow/skein/world"
)

// skein exports histories and does not check them: a check replays a run's
// log against the workflow code, which this binary does not link (it has no
// user workflows). The user's own tests link the checker
// (skeintest.CheckHistories) and read what this command writes.

var runsExportCmd = &command{
	group: "runs", name: "export", usage: "[-out dir] [-workflow name] [-status s,s] [-limit n] [runId ...]", nargs: -1,
	summary: "write runs' event logs as history files, for a replay check",
	help: `
Writes the event logs of runs as history files: one JSON event per line, as
"runs events -show-tokens" prints them: THE FILES HOLD SECRETS (each run's
secret and its webhook tokens in clear, which the replay needs). A test of your own replays them against your
current code with skeintest.CheckHistories and fails before a deploy that
would hold them (REPLAY_DIVERGENCE); skein cannot run that check itself,
since it does not link your workflows.

Without run IDs, exports the runs not ended (-status pending,running,held;
"all" for every status), of every workflow or of -workflow; with run IDs,
those runs, whatever their status. With -out DIR, writes one file per run,
DIR/<runId>.jsonl (replacing an older export of the same run), and lists
them; without it, prints every run's events to stdout, one run after the
other (a history file may hold several runs).

A history holds what the log holds: inputs, results, hook payloads, and the
run's secret, from which its generated webhook tokens are derived. Keep
exported histories of live runs where you keep that data.

Examples:
  skein runs export -out testdata/histories
  skein -stack orders-prod runs export -workflow order -out testdata/histories
  skein runs export wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T > run.jsonl   # any run, whatever its status`,
	setup: func(fs *flag.FlagSet) runFunc {
		var q exportQuery
		fs.StringVar(&q.out, "out", "", "write one file per run into `dir` (created if needed); default: stdout")
		fs.StringVar(&q.workflow, "workflow", "", "only runs of the workflow `name`")
		fs.StringVar(&q.status, "status", "pending,running,held", "only runs in these `statuses` (comma-separated, or all)")
		fs.IntVar(&q.limit, "limit", 0, "at most `n` runs (0: no limit)")
		return func(ctx context.Context, e *env, args []string) error { return exportRuns(ctx, e, q, args) }
	},
}

type exportQuery struct {
	out, workflow, status string
	limit                 int
}

func (q exportQuery) statuses() ([]world.RunStatus, error) {
	if q.status == "all" {
		return []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld,
			world.RunStatusCompleted, world.RunStatusFailed, world.RunStatusCancelled}, nil
	}
	var out []world.RunStatus
	for _, s := range strings.Split(q.status, ",") {
		st := world.RunStatus(strings.TrimSpace(s))
		if !st.Valid() {
			return nil, usagef("unknown status %q in -status (want pending, running, held, completed, failed, cancelled, or all)", s)
		}
		out = append(out, st)
	}
	return out, nil
}

func exportRuns(ctx context.Context, e *env, q exportQuery, ids []string) error {
	statuses, err := q.statuses()
	if err != nil {
		return err
	}
	if q.limit < 0 {
		return usagef("-limit must not be negative")
	}
	for _, id := range ids {
		if err := world.ValidateID(world.PrefixRun, id); err != nil {
			return usagef("%q is not a run ID: %v", id, err)
		}
	}
	if err := e.open(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		if ids, err = listRunIDs(ctx, e.w, q, statuses); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		fmt.Fprintln(e.stderr, "no runs to export")
		return nil
	}
	if q.out != "" {
		if err := os.MkdirAll(q.out, 0o755); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := exportRun(ctx, e, q.out, id); err != nil {
			return err
		}
	}
	if q.out != "" {
		fmt.Fprintf(e.stdout, "exported %d runs to %s\n", len(ids), q.out)
	}
	return nil
}

// listRunIDs lists the runs to export, status by status, newest first; a
// run that changes status while they are listed is listed once.
func listRunIDs(ctx context.Context, w world.Storage, q exportQuery, statuses []world.RunStatus) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, st := range statuses {
		for cursor := ""; ; {
			page, err := w.ListRuns(ctx, &world.ListRunsParams{WorkflowName: q.workflow, Status: st,
				Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
			if err != nil {
				return nil, err
			}
			for _, r := range page.Items {
				if q.limit > 0 && len(ids) == q.limit {
					return ids, nil
				}
				if !seen[r.RunID] {
					seen[r.RunID] = true
					ids = append(ids, r.RunID)
				}
			}
			if !page.HasMore || len(page.Items) == 0 {
				break
			}
			cursor = page.Cursor
		}
	}
	return ids, nil
}

// exportRun writes one run's log to stdout, or to dir/<runId>.jsonl
// (through a temporary file, so that an interrupted export leaves no
// partial history behind).
func exportRun(ctx context.Context, e *env, dir, runID string) error {
	r, err := e.getRun(ctx, runID)
	if err != nil {
		return err
	}
	if err := e.stillSealed(r, "export it (a sealed history does not replay)"); err != nil {
		return err
	}
	events, err := allEvents(ctx, e.w, runID)
	if err != nil {
		return err
	}
	if dir == "" {
		return writeEvents(e.stdout, events)
	}
	path := filepath.Join(dir, runID+".jsonl")
	f, err := os.CreateTemp(dir, "."+runID+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := writeEvents(f, events); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s  %s  %s  %d events\n", path, safeName(r.WorkflowName), r.Status, len(events))
	return nil
}

// writeEvents writes events as JSON lines, the format of runs events and
// of history files.
func writeEvents(w io.Writer, events []world.Event) error {
	enc := json.NewEncoder(w)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}
