package workflow_test

import (
	"testing"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestRedactEvent: what resumes hooks is hidden (the run's secret, webhook
// tokens), a chosen hook token stays, and the event given is not changed.
func TestRedactEvent(t *testing.T) {
	t.Parallel()
	created := &world.RunCreated{WorkflowName: "wf", Secret: []byte("0123456789abcdef0123456789abcdef")}
	got := workflow.RedactEvent(world.Event{Data: created})
	if d := got.Data.(*world.RunCreated); len(d.Secret) != 0 || d.WorkflowName != "wf" {
		t.Errorf("run_created redacted to %+v", d)
	}
	if len(created.Secret) == 0 {
		t.Error("RedactEvent changed the event it was given")
	}
	web := workflow.RedactEvent(world.Event{Data: &world.HookCreated{Token: "secret-token", IsWebhook: true}})
	if d := web.Data.(*world.HookCreated); d.Token != workflow.RedactToken("secret-token") {
		t.Errorf("webhook token shown as %q", d.Token)
	}
	plain := workflow.RedactEvent(world.Event{Data: &world.HookCreated{Token: "approve/1"}})
	if d := plain.Data.(*world.HookCreated); d.Token != "approve/1" {
		t.Errorf("a chosen token shown as %q", d.Token)
	}
}
