package redact_test

import (
	"testing"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestRedactEvent: what resumes hooks is hidden (the run's secret, webhook
// tokens), a chosen hook token stays, and the event given is not changed.
func TestRedactEvent(t *testing.T) {
	t.Parallel()
	created := &world.RunCreated{WorkflowName: "wf", Secret: []byte("0123456789abcdef0123456789abcdef")}
	got := redact.Event(world.Event{Data: created})
	if d := got.Data.(*world.RunCreated); len(d.Secret) != 0 || d.WorkflowName != "wf" {
		t.Errorf("run_created redacted to %+v", d)
	}
	if len(created.Secret) == 0 {
		t.Error("redact.Event changed the event it was given")
	}
	web := redact.Event(world.Event{Data: &world.HookCreated{Token: "secret-token", IsWebhook: true}})
	if d := web.Data.(*world.HookCreated); d.Token != redact.Token("secret-token") {
		t.Errorf("webhook token shown as %q", d.Token)
	}
	plain := redact.Event(world.Event{Data: &world.HookCreated{Token: "approve/1"}})
	if d := plain.Data.(*world.HookCreated); d.Token != "approve/1" {
		t.Errorf("a chosen token shown as %q", d.Token)
	}
}

// TestRedactEventWebhookRequest: a webhook request recorded with the token
// in its URL shows it redacted, the rest of the request as it was; a
// payload of another shape, and a URL already redacted, are left alone.
func TestRedactEventWebhookRequest(t *testing.T) {
	t.Parallel()
	const tok = "tok-7Q2X9abc"
	recv := func(payload string) string {
		ev := redact.Event(world.Event{Data: &world.HookReceived{Token: tok, Payload: []byte(payload)}})
		return string(ev.Data.(*world.HookReceived).Payload)
	}
	legacy := `{"method":"POST","url":"https://h.example/p` + workflow.WebhookPath + tok + `?a=1","header":{"X-A":["b"]},"body":"e30="}`
	want := `{"method":"POST","url":"https://h.example/p` + workflow.WebhookPath + redact.Token(tok) + `?a=1","header":{"X-A":["b"]},"body":"e30="}`
	if got := recv(legacy); got != want {
		t.Errorf("recorded request shown as\n%s\nwant\n%s", got, want)
	}
	if got := recv(want); got != want {
		t.Errorf("a redacted request shown as %s", got)
	}
	for _, other := range []string{`{"method":"POST","url":"/x/` + tok + `","extra":1}`, `"` + tok + `"`, `{"by":"` + tok + `"}`} {
		if got := recv(other); got != other {
			t.Errorf("payload %s shown as %s", other, got)
		}
	}
}
