package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// ticker writes a line to its "ticks" stream, waits on its hook, writes
// another line and ends.
var (
	tick = workflow.NewStep("tick", func(ctx context.Context, n int) (int, error) {
		_, err := fmt.Fprintf(workflow.Writer(ctx, "ticks"), "tick %d\n", n)
		return n, err
	})
	ticker = workflow.New("ticker", func(ctx workflow.Context, token string) (int, error) {
		if _, err := tick.Call(ctx, 1); err != nil {
			return 0, err
		}
		if _, err := workflow.NewHook[int](ctx, workflow.HookOptions{Token: token}).Receive(ctx); err != nil {
			return 0, err
		}
		return tick.Call(ctx, 2)
	})
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Every command that reads works while a worker holds the store, and
// streams read -follow follows a live run to its end; a command that
// changes the store says that the worker has to stop first.
func TestCLIWhileWorkerRuns(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "live.db")
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
	run, err := ticker.Start(ctx, c, "tick/hook")
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()

	// Follow the stream from the start while the run is live.
	var out, errb syncBuffer
	followed := make(chan int, 1)
	go func() {
		e := &env{stdout: &out, stderr: &errb}
		followed <- runWith(ctx, e, []string{"-db", db, "streams", "read", id, "-name", "ticks", "-follow"})
	}()
	waitOutput(ctx, t, &out, "tick 1\n")
	dbArgs := []string{"-db", db}
	// The stream's chunk is stored while step 1 still runs, before the
	// commit that completes it and creates the hook: wait for the hook.
	waitHook(ctx, t, c, "tick/hook")

	cli(append(dbArgs, "runs", "list")...).expect(t, 0, id, "ticker", "running")
	cli(append(dbArgs, "runs", "show", id)...).expect(t, 0, "Status     running", "hook tick/hook")
	cli(append(dbArgs, "runs", "events", id)...).expect(t, 0, "run_created", "step_completed", "hook_created")
	cli(append(dbArgs, "hooks", "list")...).expect(t, 0, "tick/hook")
	cli(append(dbArgs, "streams", "list", id)...).expect(t, 0, "ticks")
	cli(append(dbArgs, "hooks", "resume", "tick/hook", "1")...).
		expect(t, 1, "in use by another process", "hooks resume changes it", "stop that process")
	if r := cli(append(dbArgs, "runs", "cancel", id)...); r.code != 1 || strings.Count(r.err, "\n") != 1 {
		t.Errorf("runs cancel on a held store: exit %d, want 1 and one line:\n%s", r.code, r.err)
	}
	select {
	case code := <-followed:
		t.Fatalf("the follow ended (exit %d) before the run did: %s", code, errb.String())
	default:
	}

	resume(ctx, t, c, "tick/hook", 1)
	if got, err := run.Result(ctx); err != nil || got != 2 {
		t.Fatalf("ticker result: %d, %v", got, err)
	}
	select {
	case code := <-followed:
		if code != 0 || out.String() != "tick 1\ntick 2\n" {
			t.Fatalf("follow: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("the follow did not end with the run; stdout %q", out.String())
	}
	cli(append(dbArgs, "runs", "show", id)...).expect(t, 0, "Status     completed", "Output     2")
}

// waitOutput waits until the output holds want.
func waitOutput(ctx context.Context, t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	for !strings.Contains(out.String(), want) {
		if ctx.Err() != nil {
			t.Fatalf("output %q never held %q", out.String(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
