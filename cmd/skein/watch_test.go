package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// watchLine is a line of runs watch -json.
type watchLine struct {
	Cursor   string          `json:"cursor"`
	Event    *world.Event    `json:"event"`
	Snapshot *world.RunState `json:"snapshot"`
}

func parseWatch(t *testing.T, out string) []watchLine {
	t.Helper()
	var lines []watchLine
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var w watchLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, w)
	}
	return lines
}

// wantDense fails unless the lines are events from seq `from` on, one by
// one, ending with the run's end: its terminal event, followed at most by
// the run_deactivated committed with it.
func wantDense(t *testing.T, lines []watchLine, from int64) {
	t.Helper()
	for i, l := range lines {
		if l.Event == nil || l.Event.Seq != from+int64(i) || l.Cursor == "" {
			t.Fatalf("line %d: %+v, want event %d with a cursor", i, l, from+int64(i))
		}
	}
	last := lines[len(lines)-1].Event
	if last.Type() == world.EventRunDeactivated && len(lines) > 1 {
		last = lines[len(lines)-2].Event
	}
	if !last.Type().Terminal() {
		t.Fatalf("last event %s, want the run's end", last.Type())
	}
}

// runs watch follows a live run while a worker holds the store, ends with
// it, and resumes from a cursor.
func TestRunsWatchWhileWorkerRuns(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "watch.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := workflow.NewRegistry()
	if err := reg.Register(ticker, tick); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	defer func() { stop(); <-stopped }()
	c := worker.Client()
	run, err := ticker.Start(ctx, c, "watch/hook")
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()

	var one, all, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, &env{stdout: &one, stderr: &errb}, []string{"-db", db, "runs", "watch", id, "-json"})
	}()
	actx, stopAll := context.WithCancel(ctx)
	allDone := make(chan int, 1)
	go func() {
		allDone <- runWith(actx, &env{stdout: &all, stderr: &errb}, []string{"-db", db, "runs", "watch", "-types", "run_completed"})
	}()
	waitOutput(ctx, t, &one, `"hook_created"`)
	time.Sleep(200 * time.Millisecond) // the every-run watch has its position
	resume(ctx, t, c, "watch/hook", 1)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("runs watch: exit %d, stderr %q", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("runs watch did not end with the run: %q", one.String())
	}
	lines := parseWatch(t, one.String())
	wantDense(t, lines, 1)
	waitOutput(ctx, t, &all, id)
	stopAll()
	if code := <-allDone; code != 0 || strings.Count(all.String(), "\n") != 1 || !strings.Contains(all.String(), "run_completed") {
		t.Fatalf("runs watch -types run_completed: exit %d, %q", code, all.String())
	}

	// Resuming after the third line prints the rest; after the last, nothing.
	dbArgs := []string{"-db", db, "runs", "watch", id, "-json", "-after"}
	r := cli(append(dbArgs, lines[2].Cursor)...)
	r.expect(t, 0)
	wantDense(t, parseWatch(t, r.out), 4)
	cli(append(dbArgs, lines[len(lines)-1].Cursor)...).expect(t, 0)
	cli(append(dbArgs, "bogus")...).expect(t, 2, "-after")
	cli("-db", db, "runs", "watch", id, "-types", "nope").expect(t, 2, `unknown event type "nope"`)
	cli("-db", db, "runs", "watch", id, "extra").expect(t, 2, "want 0 to 1 argument(s)")
	// Event 12 is the run_deactivated committed with the run's end.
	cli("-db", db, "runs", "watch", id, "-snapshot").expect(t, 0, "(ticker) completed after event 12: 2 steps, 0 hooks, 0 waits", "tick")
}

const watchWorkerEnv = "SKEIN_TEST_WATCH_WORKER"

// sleeper runs a step, sleeps and runs another: long enough to be watched
// live from another process.
var sleeper = workflow.New("sleeper", func(ctx workflow.Context, d time.Duration) (int, error) {
	if _, err := tick.Call(ctx, 1); err != nil {
		return 0, err
	}
	if err := workflow.Sleep(ctx, d); err != nil {
		return 0, err
	}
	return tick.Call(ctx, 2)
})

// TestWatchWorkerProcess is the worker of TestRunsWatchAcrossProcesses,
// run in a process of its own: it holds the store, starts a sleeper run,
// prints its ID and runs it to its end.
func TestWatchWorkerProcess(t *testing.T) {
	db := os.Getenv(watchWorkerEnv)
	if db == "" {
		t.Skip("the worker process of TestRunsWatchAcrossProcesses")
	}
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := workflow.NewRegistry()
	if err := reg.Register(sleeper, tick); err != nil {
		t.Fatal(err)
	}
	worker, err := worker.New(worker.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(wctx) }()
	defer func() { stop(); <-stopped }()
	run, err := sleeper.Start(ctx, worker.Client(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("run %s\n", run.ID())
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
}

// runs watch follows a run that another process is running, reading the
// store the worker holds.
func TestRunsWatchAcrossProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv(watchWorkerEnv) != "" {
		t.Skip("inside the worker process")
	}
	db := filepath.Join(t.TempDir(), "xproc.db")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWatchWorkerProcess$", "-test.count=1")
	child.Env = append(os.Environ(), watchWorkerEnv+"="+db)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Wait() }()
	sc := bufio.NewScanner(stdout)
	var id string
	for id == "" && sc.Scan() {
		id, _ = strings.CutPrefix(sc.Text(), "run ")
	}
	if id == "" {
		t.Fatalf("the worker process printed no run ID")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	start := time.Now()
	r := cli("-db", db, "runs", "watch", id, "-json")
	r.expect(t, 0)
	lines := parseWatch(t, r.out)
	wantDense(t, lines, 1)
	if time.Since(start) < 500*time.Millisecond {
		t.Fatalf("the watch ended after %s, before the run's 1s sleep: it did not follow it live", time.Since(start))
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("the worker process: %v", err)
	}
}
