package handler_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/world"
)

// TestSQSScheduleMessages: a schedule message, as EventBridge Scheduler
// sends it, starts its run; delivered twice (in one batch or two) it starts
// one; one with an unfilled placeholder, or with another field beside
// skeinSchedule, is malformed (reported failed, for the dead-letter queue);
// one naming an unregistered workflow is logged and its run fails; none
// fails the batch.
func TestSQSScheduleMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{})
	ctx := context.Background()
	body := func(workflowName, at string) string {
		m, err := schedmsg.EncodeMessage(schedmsg.Message{
			ScheduleARN:   "arn:aws:scheduler:us-east-1:000000000000:schedule/default/hourly",
			ScheduledTime: at, Workflow: workflowName, Input: []byte(`2`),
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(m)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("first", body(serial.Name(), "2026-11-24T10:00:00Z"), 1),
		sqsRecord("again", body(serial.Name(), "2026-11-24T10:00:00Z"), 1),
		sqsRecord("placeholder", body(serial.Name(), "<aws.scheduler.scheduled-time>"), 1),
		sqsRecord("mixed", `{"skeinSchedule":{"name":"x","scheduledTime":"2026-11-24T10:00:00Z","workflow":"w"},"runId":"run_1"}`, 1),
		sqsRecord("unregistered", body("not-deployed", "2026-11-24T11:00:00Z"), 1),
	}}
	lctx, cancel := lambdaCtx(t, "req-schedule", 30*time.Second)
	defer cancel()
	resp := invoke(t, lctx, b.fn, ev)
	got := failedIDs(resp)
	slices.Sort(got)
	if want := []string{"mixed", "placeholder"}; !slices.Equal(got, want) {
		t.Errorf("batchItemFailures %v, want %v", got, want)
	}
	// The same firing once more, in a later batch.
	resp = invoke(t, lctx, b.fn, events.SQSEvent{Records: []events.SQSMessage{sqsRecord("later", body(serial.Name(), "2026-11-24T10:00:00Z"), 1)}})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batchItemFailures %v", resp.BatchItemFailures)
	}
	page, err := b.client.ListRuns(ctx, client.ListRunsOptions{WorkflowName: serial.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 || page.Runs[0].IdempotencyKey != "schedule:hourly:2026-11-24T10:00:00Z" {
		t.Fatalf("runs %+v, want one keyed by the firing", page.Runs)
	}
	b.drive(t, page.Runs[0].ID, 20)
	if st, err := statusOfID(ctx, b.client, page.Runs[0].ID); err != nil || st != world.RunStatusCompleted {
		t.Errorf("scheduled run %s (%v), want completed", st, err)
	}
	page, err = b.client.ListRuns(ctx, client.ListRunsOptions{WorkflowName: "not-deployed"})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("runs of the unregistered workflow: %+v, %v", page, err)
	}
	b.drive(t, page.Runs[0].ID, 5)
	if info, err := b.client.GetRun(ctx, page.Runs[0].ID); err != nil || info.Status != world.RunStatusFailed {
		t.Errorf("run of the unregistered workflow: %+v, %v; want failed", info, err)
	}
	var logged, placeholder bool
	for _, l := range b.logs.lines(t) {
		if l["level"] == "ERROR" && l["workflow"] == "not-deployed" && l["schedule"] == "hourly" && contains(l["message"].(string), "not registered") {
			logged = true
		}
		switch l["messageId"] {
		case "placeholder":
			r, _ := l["reason"].(string)
			placeholder = placeholder || contains(r, "<aws.scheduler.scheduled-time>")
		}
	}
	if !logged {
		t.Error("no error logged for the schedule naming an unregistered workflow")
	}
	if !placeholder {
		t.Error("no logged reason naming the unfilled placeholder")
	}
}
