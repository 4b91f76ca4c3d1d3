//go:build integration

package main

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// runs export on a deployed stack (the emulators): a run a worker runs on
// the stack waits at its hook; export writes its history, which replays
// against the code that recorded it and not against a changed one; and
// skeintest.CheckWorld reads the same run from the table directly.
func TestRunsExportOnDeployedStack(t *testing.T) {
	t.Parallel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, queueURL := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(context.Background(), dynamotest.Config(c, res, queueURL))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := workflow.NewRegistry().MustRegister(ticker, tick)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	token := fmt.Sprint("export-", time.Now().UnixNano())
	run, err := ticker.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	waitHook(ctx, t, wk.Client(), token)

	dir := t.TempDir()
	flags := []string{"-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket}
	cli(append(flags, "runs", "export", "-out", dir)...).expect(t, 0, run.ID()+".jsonl", "ticker  running", "exported 1 runs")
	file := filepath.Join(dir, run.ID()+".jsonl")
	rep, err := skeintest.CheckHistoryFile(reg, file)
	if err != nil || len(rep.Runs) != 1 || !rep.Compatible() {
		t.Fatalf("the code that recorded it: %v %v", rep, err)
	}
	changed := workflow.New("ticker", func(ctx workflow.Context, token string) (int, error) {
		return tick.Call(ctx, 0) // another input: the log's first step does not match
	})
	rep, err = skeintest.CheckHistoryFile(workflow.NewRegistry().MustRegister(changed, tick), file)
	if err != nil || rep.Compatible() || !strings.Contains(rep.String(), "called with other arguments") {
		t.Fatalf("changed code: %v %v", rep, err)
	}

	rep, err = skeintest.CheckWorld(ctx, reg, w, skeintest.WorldFilter{})
	if err != nil || len(rep.Runs) != 1 || rep.Runs[0].RunID != run.ID() || !rep.Compatible() {
		t.Fatalf("CheckWorld: %v %v", rep, err)
	}
}
