package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// TestWaitForStore: skein ui and runs watch started before the store
// exists say so and wait for it; once a worker creates it, the dashboard
// serves and the watch follows the runs. Other commands still refuse.
func TestWaitForStore(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "later.db")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var watchOut, watchErr syncBuffer
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan int, 1)
	go func() {
		watchDone <- runWith(wctx, &env{stdout: &watchOut, stderr: &watchErr}, []string{"-db", db, "runs", "watch", "-types", "run_completed"})
	}()
	var uiOut, uiErr syncBuffer
	uctx, stopUI := context.WithCancel(ctx)
	uiDone := make(chan int, 1)
	go func() {
		uiDone <- runWith(uctx, &env{stdout: &uiOut, stderr: &uiErr}, []string{"-db", db, "ui", "-addr", "127.0.0.1:0"})
	}()
	waitOutput(ctx, t, &watchErr, "no store at "+db+" yet; waiting for it to appear")
	waitOutput(ctx, t, &uiErr, "no store at "+db+" yet; waiting for it to appear")
	cli("-db", db, "runs", "list").expect(t, 1, "no store at "+db+":")

	// The store appears: the dashboard serves it.
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	waitOutput(ctx, t, &uiOut, "serving on http://127.0.0.1:")
	stopUI()
	if code := <-uiDone; code != 0 {
		t.Fatalf("skein ui: exit %d, %q", code, uiErr.String())
	}
	worker, err := worker.New(worker.Config{World: w, Registry: workflow.NewRegistry().MustRegister(ticker, tick)})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = worker.Run(rctx) }()
	defer func() { stop(); <-stopped }()
	run, err := ticker.Start(ctx, worker.Client(), "later/hook")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the watch has found the store and has its position
	resume(ctx, t, worker.Client(), "later/hook", 1)
	waitOutput(ctx, t, &watchOut, run.ID())
	stopWatch()
	if code := <-watchDone; code != 0 || !strings.Contains(watchOut.String(), "run_completed") {
		t.Fatalf("runs watch: exit %d, %q %q", code, watchOut.String(), watchErr.String())
	}
}

// TestWaitForStoreUI: skein ui waits for a missing store, and stops
// waiting when interrupted.
func TestWaitForStoreUI(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "never.db")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"-db", db, "ui", "-addr", "127.0.0.1:0"})
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer wcancel()
	waitOutput(wctx, t, &stderr, "waiting for it to appear")
	cancel()
	if code := <-done; code != 1 || !strings.Contains(stderr.String(), "stopped waiting") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
}
