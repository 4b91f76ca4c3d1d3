package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A schedule message, as EventBridge Scheduler sends it, starts one run per
// scheduled time however often it is delivered; one that does not decode
// is a permanent error; one naming an unregistered workflow starts a run
// that fails as not registered.
func TestProcessorScheduleMessages(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	reg := scheduleRegistry(t)
	p, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	stop := startWorkers(t, 1, sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithPollWait(10*time.Millisecond))
	defer stop()
	ctx := context.Background()
	msg := func(workflowName, at string) []byte {
		b, err := schedmsg.EncodeMessage(schedmsg.Message{
			ScheduleARN:   "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/nightly",
			ScheduledTime: at, Workflow: workflowName, Input: []byte(`{"n":5}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for range 2 {
		if err := p.Process(ctx, msg("scheduled", "2026-11-24T10:00:00Z"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Process(ctx, msg("scheduled", "2026-11-24T10:05:00Z"), 1); err != nil {
		t.Fatal(err)
	}
	keys := scheduledRuns(t, p.Client(), 2)
	if len(keys) != 2 || keys[0] != "schedule:nightly:2026-11-24T10:00:00Z" || keys[1] != "schedule:nightly:2026-11-24T10:05:00Z" {
		t.Fatalf("runs %v", keys)
	}

	if err := p.Process(ctx, msg("scheduled", "<aws.scheduler.scheduled-time>"), 1); !sdk.IsPermanent(err) {
		t.Errorf("unfilled placeholder: %v, want a permanent error", err)
	}

	if err := p.Process(ctx, msg("not-deployed", "2026-11-24T11:00:00Z"), 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := p.Client().ListRuns(ctx, sdk.ListRunsOptions{WorkflowName: "not-deployed"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) == 1 && page.Runs[0].Status == world.RunStatusFailed {
			if page.Runs[0].ErrorCode != "RUNTIME_ERROR" {
				t.Errorf("error code %s", page.Runs[0].ErrorCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs of an unregistered workflow: %+v", page.Runs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
