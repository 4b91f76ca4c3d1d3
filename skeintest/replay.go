package skeintest

// # Checking recorded histories against new code
//
// A run outlives the deployment that started it, so a change to a workflow
// must replay the logs of the runs in flight, or a worker running it holds
// them (REPLAY_DIVERGENCE). The replay checker answers that before the
// deploy: it replays recorded logs ("histories") against the registry of
// the code under test, the way a worker does when it picks a run up, and
// reports per run whether the code goes on with it or the first event where
// they part ways. Nothing executes: step results, hook payloads and elapsed
// sleeps come from the log, and where the code asks for something the log
// does not hold, the recorded history ends (compatible so far).
//
// The skein command cannot run the check itself: it does not link your
// workflows. It exports histories instead, and your tests (or a program of
// your own) link the checker:
//
//	skein -stack prod runs export -out testdata/histories   # the runs not ended, one file each
//
//	func TestHistories(t *testing.T) {
//		skeintest.CheckHistories(t, orders.Registry(), "testdata/histories/*.jsonl")
//	}
//
// CheckWorld reads the histories from a World directly (a local store, or
// the stack's table), for a check in a program of your own.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// ReplayReport is what replaying one run's recorded log against the
// registry found, without executing anything.
//
// Its fields:
//
//   - RunID is the run's ID.
//   - WorkflowName is the workflow the log records.
//   - Events is the number of events replayed.
//   - Status is the run's status where the log ends.
//   - Divergence is the first place where the code and the log part ways (nil if the code replays the whole log): Seq, EventID, EventType and CorrelationID of the creation event where they part, Logged what the log records there, Asked what the code does instead, Code the error code a worker holds the run with (REPLAY_DIVERGENCE), Message the whole divergence (and its Error()).
//   - Returned reports that the code returned where the log ends, with Output or with Err.
//   - Output is what the code returned, when it returned without an error.
//   - Err is the error the code returned (a panic included).
//   - Panicked reports that the code panicked replaying the log, Err saying how.
//   - Next lists the steps, hooks and sleeps the code asks for that the log does not hold (Operation: Kind, Name, ID).
//
// Its methods:
//
//   - Compatible reports whether this code can go on with the run.
//   - Problem returns why the code is not compatible with the run's log, or nil.
//   - String describes the report in one line.
type ReplayReport = sdk.ReplayReport

// HistoryReport is what checking histories found: one report per run, in
// the order read.
type HistoryReport struct {
	Runs []*ReplayReport
}

// Compatible reports whether the code goes on with every run.
func (h *HistoryReport) Compatible() bool { return len(h.Incompatible()) == 0 }

// Incompatible returns the reports of the runs the code would hold (or that
// it panics on).
func (h *HistoryReport) Incompatible() []*ReplayReport {
	var out []*ReplayReport
	for _, r := range h.Runs {
		if !r.Compatible() {
			out = append(out, r)
		}
	}
	return out
}

// String lists the runs, one summary a line.
func (h *HistoryReport) String() string {
	var b strings.Builder
	for _, r := range h.Runs {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// CheckHistory reads a history file's runs from r (see ReadHistories) and
// replays each against reg's code (the replay a worker does). A malformed
// file is a *HistoryFileError; so is a run of a workflow reg does not
// hold, wrapping a *client.RequestError (ErrUnknownWorkflow) naming it, and a run
// exported without its secrets whose hook tokens the replay cannot check,
// wrapping a *NoTokensError (errors.Is ErrNoTokens) instead of reporting
// a divergence that is not the code's.
func CheckHistory(reg *workflow.Registry, r io.Reader) (*HistoryReport, error) {
	return checkNamed(reg, r, "history")
}

// CheckHistoryFile is CheckHistory on the file at path, named in errors.
func CheckHistoryFile(reg *workflow.Registry, path string) (*HistoryReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("skeintest: %w", err)
	}
	defer f.Close()
	return checkNamed(reg, f, path)
}

func checkNamed(reg *workflow.Registry, r io.Reader, name string) (*HistoryReport, error) {
	hs, err := ReadHistories(r, name)
	if err != nil {
		return nil, err
	}
	rep := &HistoryReport{}
	for _, h := range hs {
		rr, err := sdk.CheckLog(reg, h.Events)
		if err == nil {
			err = noTokens(h.Events, rr)
		}
		if err != nil {
			return nil, &HistoryFileError{File: name, Line: h.Line, Err: err}
		}
		rep.Runs = append(rep.Runs, rr)
	}
	return rep, nil
}

// CheckHistories checks every history file that matches the glob pattern
// (filepath.Glob, such as "testdata/histories/*.jsonl") against reg's code,
// and fails t once per run the code would hold, with the file and the
// divergence: what the log records and what the code asks for instead. A
// pattern that matches nothing, a malformed file and a run of an
// unregistered workflow fail t too. It returns the reports of the files it
// could read.
func CheckHistories(t testing.TB, reg *workflow.Registry, pattern string) *HistoryReport {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("skeintest: CheckHistories: pattern %q: %v", pattern, err)
	}
	if len(files) == 0 {
		t.Errorf("skeintest: CheckHistories: no history file matches %q (export some with `skein runs export -out DIR`)", pattern)
		return &HistoryReport{}
	}
	all := &HistoryReport{}
	for _, file := range files {
		rep, err := CheckHistoryFile(reg, file)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, r := range rep.Incompatible() {
			t.Errorf("%s: %s", file, r)
		}
		all.Runs = append(all.Runs, rep.Runs...)
	}
	return all
}

// WorldFilter picks the runs CheckWorld reads.
type WorldFilter struct {
	// Workflows names the workflows whose runs to check; empty, every
	// workflow the registry holds (runs of other workflows, which another
	// program may serve from the same store, are not read). A name the
	// registry does not hold is an error.
	Workflows []string
	// Statuses are the run statuses to check; empty, the runs not ended
	// (pending, running, held): those a deploy of the code would meet.
	Statuses []world.RunStatus
	// Limit bounds the runs checked; 0 is no limit.
	Limit int
}

// CheckWorld replays the logs of runs read from a World's storage (a local
// store, opened read-only if a worker holds it, or a dynamoworld.World on a
// stack's table) against reg's code, as CheckHistory does for files. It
// reads only: ListRuns and ListEvents. A run whose log changes while it is
// read is checked as far as the read went.
func CheckWorld(ctx context.Context, reg *workflow.Registry, w world.Storage, f WorldFilter) (*HistoryReport, error) {
	names := f.Workflows
	if len(names) == 0 {
		names = sdk.Workflows(reg)
		slices.Sort(names)
	}
	registered := sdk.Workflows(reg)
	slices.Sort(registered)
	for _, n := range names {
		if !slices.Contains(registered, n) {
			return nil, &client.RequestError{Kind: client.ErrUnknownWorkflow, Workflow: n, Registered: registered}
		}
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld}
	}
	rep := &HistoryReport{}
	seen := map[string]bool{} // a run whose status changes while the runs are listed is checked once
	for _, name := range names {
		for _, st := range statuses {
			if err := checkWorldRuns(ctx, reg, w, worldQuery{name, st, f.Limit, seen}, rep); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// worldQuery is one listing of CheckWorld: a workflow's runs in a status.
type worldQuery struct {
	workflow string
	status   world.RunStatus
	limit    int
	seen     map[string]bool
}

func checkWorldRuns(ctx context.Context, reg *workflow.Registry, w world.Storage, q worldQuery, rep *HistoryReport) error {
	for cursor := ""; ; {
		page, err := w.ListRuns(ctx, &world.ListRunsParams{WorkflowName: q.workflow, Status: q.status,
			Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return fmt.Errorf("skeintest: list runs of %q (%s): %w", q.workflow, q.status, err)
		}
		for _, run := range page.Items {
			if q.limit > 0 && len(rep.Runs) >= q.limit {
				return nil
			}
			if q.seen[run.RunID] {
				continue
			}
			q.seen[run.RunID] = true
			events, err := ReadLog(ctx, w, run.RunID)
			if err != nil {
				return err
			}
			rr, err := sdk.CheckLog(reg, events)
			if err != nil {
				return fmt.Errorf("skeintest: run %s: %w", run.RunID, err)
			}
			rep.Runs = append(rep.Runs, rr)
		}
		if !page.HasMore || len(page.Items) == 0 {
			return nil
		}
		cursor = page.Cursor
	}
}

// ReadLog reads a run's whole log from storage, page by page.
func ReadLog(ctx context.Context, w world.Storage, runID string) ([]world.Event, error) {
	var out []world.Event
	for cursor := ""; ; {
		page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID,
			Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, fmt.Errorf("skeintest: read the log of run %s: %w", runID, err)
		}
		out = append(out, page.Items...)
		if !page.HasMore || len(page.Items) == 0 {
			return out, nil
		}
		cursor = page.Cursor
	}
}
