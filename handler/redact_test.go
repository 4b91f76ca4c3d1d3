package handler_test

import (
	"github.com/skeinflow/skein/worker"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/workflow"
)

// apiWebhookEcho returns the request its webhook received.
var apiWebhookEcho = workflow.New("api-webhook-echo", func(ctx workflow.Context, _ struct{}) (*workflow.Request, error) {
	return workflow.NewWebhook(ctx, workflow.WebhookOptions{}).Receive(ctx)
})

// TestAPIHidesWebhookTokens: a run whose output is the request its webhook
// received (delivered through the webhook function) shows it through the
// API with the token redacted: the request was recorded so.
func TestAPIHidesWebhookTokens(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, true, func(c *handler.Config) {
		if err := c.Worker.Registry.Register(apiWebhookEcho); err != nil {
			t.Fatal(err)
		}
	})
	r := b.do(t, http.MethodPost, "/v1/workflows/api-webhook-echo/runs", `{"input":{}}`)
	if r.status != http.StatusCreated && r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	id, _ := r.body["runId"].(string)
	token := b.waitHook(t, id).Token
	fn, err := handler.NewWebhook(handler.Config{Worker: worker.Config{World: b.w, Registry: b.reg}})
	if err != nil {
		t.Fatal(err)
	}
	wb := &webhookBundle{w: b.w, fn: fn}
	if resp := wb.call(t, urlRequest(http.MethodPost, token, "hello", false)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %d", resp.StatusCode)
	}
	b.waitStatus(t, id, "completed")
	for _, path := range []string{"/v1/runs/" + id, "/v1/runs/" + id + "/result"} {
		r := b.do(t, http.MethodGet, path, "")
		if r.status != http.StatusOK || strings.Contains(r.raw, token) || !strings.Contains(r.raw, redact.Token(token)+"?a=1") {
			t.Errorf("GET %s: %d %s; want the request with its token redacted", path, r.status, r.raw)
		}
	}
}
