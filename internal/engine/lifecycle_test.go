package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestObserveCommitOfAStepAllocatesNothingUnlogged: the commits of a
// serial step (its start, its completion) are observed at every step; with
// a logger that drops their Debug messages and no Metrics, observing them
// makes no log attributes (four allocations a commit before).
func TestObserveCommitOfAStepAllocatesNothingUnlogged(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	now := time.Now()
	run := &world.Run{RunID: "run-1", WorkflowName: "w", Status: world.RunStatusRunning}
	step := &world.Step{StepID: "step-1", StepName: "s", Attempt: 1, StartedAt: now}
	res := &world.AppendResult{Run: run, Results: []world.EventResult{
		{Event: &world.Event{RunID: "run-1", CorrelationID: "step-1", Data: &world.StepStarted{StepName: "s"}}, Step: step},
		{Event: &world.Event{RunID: "run-1", CorrelationID: "step-1", CreatedAt: now, Data: &world.StepCompleted{StepName: "s"}}, Step: step},
	}}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { ObserveCommit(ctx, log, nil, res) }); n != 0 {
		t.Errorf("%.0f allocations observing a step's start and completion unlogged, want none", n)
	}
}
