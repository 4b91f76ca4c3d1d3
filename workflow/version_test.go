package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/testflows"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
)

// TestVersionsDeploy deploys v1 of a workflow on the local world, suspends
// runs at a hook and at a sleep, and switches to v2 (a step added and one
// removed): without patches the runs are held with the divergence shown
// and switching back resumes them; with patches they complete; and with
// executors pinned to their versions, v1 and an incompatible v2 run side by
// side, and a run of a version no one runs waits for its executor (see
// testflows.VersionScenarios).
func TestVersionsDeploy(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	testflows.VersionScenarios(t, func(t *testing.T, d testflows.Deployment) (*workflow.Client, func()) {
		t.Helper()
		w, err := workflow.NewWorker(workflow.WorkerConfig{World: lw, Registry: d.Registry, PollWait: 20 * time.Millisecond,
			Version: d.Version, Versions: d.Versions, Logger: d.Logger, Engine: d.Engine})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return w.Client(), func() { cancel(); <-done }
	}, time.Second)
}
