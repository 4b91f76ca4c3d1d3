//go:build integration

package main

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// runs watch follows a live run on a deployed stack (DynamoDB Local, by
// resource flags) to its end.
func TestRunsWatchOnDeployedStack(t *testing.T) {
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

	token := fmt.Sprint("watch-", time.Now().UnixNano())
	run, err := ticker.Start(ctx, wk.Client(), token)
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket}
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, &env{stdout: &out, stderr: &errb}, append(flags, "runs", "watch", run.ID(), "-json"))
	}()
	waitOutput(ctx, t, &out, `"hook_created"`)
	resume(ctx, t, wk.Client(), token, 3)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("runs watch: exit %d, stderr %q", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("runs watch did not end with the run: %q", out.String())
	}
	wantDense(t, parseWatch(t, out.String()), 1)
	cli(append(flags, "runs", "watch", "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T")...).expect(t, 1, "not found in table "+res.Table)
}
