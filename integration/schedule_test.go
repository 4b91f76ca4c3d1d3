//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// TestScheduleMessagesStartOneRun: the template's schedule sends its
// message to the work queue, as EventBridge Scheduler would (placeholders
// filled in); sent twice for the same scheduled time, plus once for the
// next, through the event source mapping and the real bootstrap, it starts
// one run per scheduled time, keyed by the schedule's name and the time.
func TestScheduleMessagesStartOneRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Parameters: map[string]string{
		"ScheduleExpression": "rate(5 minutes)", "ScheduleWorkflow": demo.Serial.Name(), "ScheduleInput": "3",
	}})
	_, props, err := s.tmpl.Resource("Schedule", &s.resolve)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := props["Target"].(map[string]any)
	if target["Arn"] != s.queues.ARN {
		t.Fatalf("the schedule targets %v, not the work queue %s", target["Arn"], s.queues.ARN)
	}
	input, _ := target["Input"].(string)
	arn := "arn:aws:scheduler:us-east-1:000000000000:schedule/default/nightly"
	for _, at := range []string{"2026-11-24T10:00:00Z", "2026-11-24T10:00:00Z", "2026-11-24T10:05:00Z"} {
		s.sendRaw(fillScheduler(input, arn, at))
	}
	want := map[string]bool{"schedule:nightly:2026-11-24T10:00:00Z": true, "schedule:nightly:2026-11-24T10:05:00Z": true}
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	var runs []*client.RunInfo
	for {
		page, err := s.client.ListRuns(ctx, client.ListRunsOptions{WorkflowName: demo.Serial.Name()})
		if err != nil {
			t.Fatal(err)
		}
		runs = page.Runs
		done := 0
		for _, r := range runs {
			if r.Status == world.RunStatusCompleted {
				done++
			}
		}
		if done == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.drain(time.Minute)
	page, err := s.client.ListRuns(ctx, client.ListRunsOptions{WorkflowName: demo.Serial.Name()})
	if err != nil {
		t.Fatal(err)
	}
	runs = page.Runs
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for _, r := range runs {
		var out int
		if !want[r.IdempotencyKey] || r.Status != world.RunStatusCompleted || r.Attributes[worker.AttrSchedule] != "nightly" {
			t.Errorf("run %s: key %s, %s, attributes %v", r.ID, r.IdempotencyKey, r.Status, r.Attributes)
		} else if err := s.client.Result(ctx, r.ID, &out); err != nil || out != 3 {
			t.Errorf("run %s: result %d, %v", r.ID, out, err)
		}
		delete(want, r.IdempotencyKey)
	}
	s.noFailures()
}
