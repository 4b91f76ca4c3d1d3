package skeintest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/world"
)

// goldenHistory is a committed history file of three runs of v1 of the
// fixture's "order" (at its hook, asleep, completed), recorded by
// TestGoldenHistory with SKEIN_UPDATE_GOLDEN=1. It catches a change of the
// event format that would make exported histories unreadable.
const goldenHistory = "testdata/replay/order-v1.jsonl"

// TestGoldenHistory reads the committed history: v1 replays it, the code
// with a step added without a patch does not, and under a patch it does.
func TestGoldenHistory(t *testing.T) {
	t.Parallel()
	if os.Getenv("SKEIN_UPDATE_GOLDEN") == "1" {
		h := recordHistories(t)
		var b bytes.Buffer
		for _, events := range [][]world.Event{h.atHook, h.asleep, h.completed} {
			if err := skeintest.WriteHistory(&b, events); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(goldenHistory, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name         string
		v            histVariant
		incompatible int
	}{
		{"v1", histVariant{}, 0},
		{"step added without a patch", histVariant{fraud: "plain"}, 3},
		{"step added under a patch", histVariant{fraud: "patched"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := skeintest.CheckHistoryFile(tc.v.registry(&histCalls{}), goldenHistory)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 3 || len(rep.Incompatible()) != tc.incompatible {
				t.Fatalf("%d runs, %d incompatible; want 3 and %d:\n%s", len(rep.Runs), len(rep.Incompatible()), tc.incompatible, rep)
			}
			want := []world.RunStatus{world.RunStatusRunning, world.RunStatusRunning, world.RunStatusCompleted}
			for i, r := range rep.Runs {
				if r.Status != want[i] {
					t.Errorf("run %d is %s; want %s", i, r.Status, want[i])
				}
			}
		})
	}
}

// historyTB records what CheckHistories reports.
type historyTB struct {
	testing.TB
	errs []string
}

func (r *historyTB) Helper() {}
func (r *historyTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckHistories exports recorded histories to files (one run a file
// and several runs in one) and checks them with CheckHistories: v1 reports
// nothing; a step added without a patch fails once per run, naming the
// file, the run and the divergence; a glob that matches nothing fails.
func TestCheckHistories(t *testing.T) {
	t.Parallel()
	h := recordHistories(t)
	dir := t.TempDir()
	write := func(name string, logs ...[]world.Event) {
		var b bytes.Buffer
		for _, events := range logs {
			if err := skeintest.WriteHistory(&b, events); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hook.jsonl", h.atHook)
	write("rest.jsonl", h.asleep, h.completed, h.fanout)
	pattern := filepath.Join(dir, "*.jsonl")

	tb := &historyTB{TB: t}
	if rep := skeintest.CheckHistories(tb, histVariant{}.registry(&histCalls{}), pattern); len(tb.errs) != 0 || len(rep.Runs) != 4 {
		t.Fatalf("v1: %d runs, errors %q", len(rep.Runs), tb.errs)
	}
	tb = &historyTB{TB: t}
	skeintest.CheckHistories(tb, histVariant{fraud: "plain"}.registry(&histCalls{}), pattern)
	if len(tb.errs) != 3 {
		t.Fatalf("step added: %d errors, want 3 (the fan-out run is of another workflow): %q", len(tb.errs), tb.errs)
	}
	for _, e := range tb.errs {
		if !strings.Contains(e, dir) || !strings.Contains(e, `the workflow asks for step "fraud-check"`) || !strings.Contains(e, "wrun_") {
			t.Errorf("error %q does not name the file, the run and the divergence", e)
		}
	}
	tb = &historyTB{TB: t}
	skeintest.CheckHistories(tb, histVariant{}.registry(&histCalls{}), filepath.Join(dir, "*.json"))
	if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], "no history file matches") {
		t.Errorf("no match: %q", tb.errs)
	}
}

// TestHistoryFileErrors: a malformed history is a *HistoryFileError
// naming the file and the line, saying what is wrong; a run of an
// unregistered workflow names the workflow.
func TestHistoryFileErrors(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(goldenHistory)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(golden), "\n"), "\n")
	first := strings.Join(lines[:6], "") // the run at its hook: 6 events
	for _, tc := range []struct {
		name    string
		content string
		line    int
		want    string
	}{
		{"empty file", "", 0, "no events"},
		{"blank lines only", "\n\n  \n", 0, "no events"},
		{"not JSON", lines[0] + "this is not json\n", 2, "not a JSON object"},
		{"truncated JSON", lines[0] + lines[1][:40] + "\n", 2, "not a valid event: unexpected end of JSON input"},
		{"a JSON array", "[" + strings.TrimSpace(lines[0]) + "]\n", 1, "not a JSON object"},
		{"unknown event type", strings.Replace(lines[0], `"run_created"`, `"run_exploded"`, 1), 1, "run_exploded"},
		{"missing its start", strings.Join(lines[1:6], ""), 1, "begins at event 2"},
		{"an event missing", lines[0] + lines[1] + strings.Join(lines[3:6], ""), 3, "event 4 (step_started) follows event 2"},
		{"without a runId", strings.Replace(lines[0], `"runId":`, `"x":`, 1), 1, "without a runId"},
		{"unknown workflow", strings.ReplaceAll(first, `"workflowName":"order"`, `"workflowName":"ordr"`), 1,
			`is of workflow "ordr", which is not registered with the Registry (it holds "order", "pack")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "bad.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := skeintest.CheckHistoryFile(histVariant{}.registry(&histCalls{}), path)
			var fe *skeintest.HistoryFileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T); want a *HistoryFileError", err, err)
			}
			if fe.File != path || fe.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q at line %d; want line %d, the file's name and %q", err, fe.Line, tc.line, tc.want)
			}
			if tc.name == "unknown workflow" && !errors.Is(err, client.ErrUnknownWorkflow) {
				t.Errorf("error %v does not match client.ErrUnknownWorkflow", err)
			}
		})
	}
}

// TestCheckWorld reads the runs not ended straight from a World: the runs
// at the hook, asleep and fanned out (not the completed one); v1 replays
// them, a step added without a patch does not; the check appends nothing;
// a workflow the registry does not hold is an error.
func TestCheckWorld(t *testing.T) {
	t.Parallel()
	r := newHistRecorder(t)
	h := recordHistoriesOn(r)
	ctx := context.Background()
	lengths := func() map[string]int {
		out := map[string]int{}
		for _, events := range [][]world.Event{h.atHook, h.asleep, h.completed, h.fanout} {
			log, err := skeintest.ReadLog(ctx, r.w, events[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			out[events[0].RunID] = len(log)
		}
		return out
	}
	before := lengths()
	rep, err := skeintest.CheckWorld(ctx, histVariant{}.registry(&histCalls{}), r.w, skeintest.WorldFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 3 || !rep.Compatible() {
		t.Fatalf("v1: want 3 compatible runs:\n%s", rep)
	}
	rep, err = skeintest.CheckWorld(ctx, histVariant{fraud: "plain"}.registry(&histCalls{}), r.w,
		skeintest.WorldFilter{Workflows: []string{"order"}, Statuses: []world.RunStatus{world.RunStatusRunning, world.RunStatusCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 3 || len(rep.Incompatible()) != 3 {
		t.Fatalf("step added: want 3 incompatible runs:\n%s", rep)
	}
	if after := lengths(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the logs changed: %v, then %v", before, after)
	}
	_, err = skeintest.CheckWorld(ctx, histVariant{}.registry(&histCalls{}), r.w, skeintest.WorldFilter{Workflows: []string{"ordr"}})
	if !errors.Is(err, client.ErrUnknownWorkflow) || !strings.Contains(err.Error(), `"ordr"`) {
		t.Errorf("unknown workflow: %v", err)
	}
}

// heldAgainStorage lists the running runs again as held, as a listing sees a
// run that is held between the listing of one status and the next.
type heldAgainStorage struct{ *localworld.World }

func (m heldAgainStorage) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	if p.Status == world.RunStatusHeld {
		q := *p
		q.Status = world.RunStatusRunning
		return m.World.ListRuns(ctx, &q)
	}
	return m.World.ListRuns(ctx, p)
}

// TestCheckWorldChecksARunOnce: a run listed under two statuses (it
// changed status while CheckWorld listed them) is checked once.
func TestCheckWorldChecksARunOnce(t *testing.T) {
	t.Parallel()
	r := newHistRecorder(t)
	recordHistoriesOn(r)
	rep, err := skeintest.CheckWorld(context.Background(), histVariant{}.registry(&histCalls{}), heldAgainStorage{r.w}, skeintest.WorldFilter{})
	if err != nil || len(rep.Runs) != 3 {
		t.Fatalf("%v %v; want the 3 runs not ended, once each", rep, err)
	}
}

// TestHistoryWithByteOrderMark: a history file saved with a UTF-8 byte
// order mark (as Windows tools write it) reads like one without.
func TestHistoryWithByteOrderMark(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(goldenHistory)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := skeintest.ReadHistories(bytes.NewReader(b), "plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	bom, err := skeintest.ReadHistories(bytes.NewReader(append([]byte("\xEF\xBB\xBF"), b...)), "bom.jsonl")
	if err != nil || len(bom) != len(plain) {
		t.Fatalf("with a byte order mark: %d runs, %v; want %d", len(bom), err, len(plain))
	}
}
