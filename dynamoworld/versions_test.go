package dynamoworld_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/worker"
)

// TestVersionsOnDynamo runs the deploy scenarios of the versioned order
// (testflows.VersionScenarios: runs of v1 suspended at a hook and at a
// sleep meet v2 with and without patches; executors pinned to v1 and v2
// side by side; a run of a version nobody runs) on DynamoDB and SQS, with
// Workers receiving from the queue as the flow function's Processor does.
// A deployment without a logger of its own logs at debug level to a
// buffer the test prints when it fails.
func TestVersionsOnDynamo(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	deploys := 0
	testflows.VersionScenarios(t, func(t *testing.T, d testflows.Deployment) (*client.Client, func()) {
		t.Helper()
		deploys++
		if d.Logger == nil {
			logs, n := &syncBuffer{}, deploys
			d.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("deployment %d (%s)'s log:\n%s", n, d.Version, logs.String())
				}
			})
		}
		wk, err := worker.New(worker.Config{World: w, Registry: d.Registry, Concurrency: 4,
			// A stopped worker's long poll may still take a message: short
			// visibility brings it back to the next deployment soon.
			Visibility: 2 * time.Second,
			Version:    d.Version, Versions: d.Versions, Logger: d.Logger, Engine: d.Engine}, append(d.Knobs, knobs.WithPollWait(100*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(ctx) }()
		return wk.Client(), func() { cancel(); <-done }
	}, 3*time.Second)
}

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
