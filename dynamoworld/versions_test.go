package dynamoworld_test

import (
	"context"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld/dynamotest"
	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/workflow"
)

// TestVersionsOnDynamo runs the deploy scenarios of the versioned order
// (testflows.VersionScenarios: runs of v1 suspended at a hook and at a
// sleep meet v2 with and without patches; executors pinned to v1 and v2
// side by side; a run of a version nobody runs) on DynamoDB and SQS, with
// Workers receiving from the queue as the flow function's Processor does.
func TestVersionsOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	testflows.VersionScenarios(t, func(t *testing.T, d testflows.Deployment) (*workflow.Client, func()) {
		t.Helper()
		wk, err := workflow.NewWorker(workflow.WorkerConfig{World: w, Registry: d.Registry, Concurrency: 4, PollWait: 100 * time.Millisecond,
			// A stopped worker's long poll may still take a message: short
			// visibility brings it back to the next deployment soon.
			Visibility: 2 * time.Second,
			Version:    d.Version, Versions: d.Versions, Logger: d.Logger, Engine: d.Engine})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(ctx) }()
		return wk.Client(), func() { cancel(); <-done }
	}, 3*time.Second)
}
