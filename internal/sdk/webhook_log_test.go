package sdk_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/sdk"
)

// TestWorkerLogsWebhookRequests: the Worker's webhook server logs each
// request at Debug with its method, status, duration and the token's
// digest, and never the token.
func TestWorkerLogsWebhookRequests(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnvWith(t, envOptions{webhooks: true, logger: logger}, threeRequests)
	ctx := e.ctx()
	run, err := threeRequests.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	token := e.webhookToken(ctx, run.ID())
	const unknown = "no-such-token-0123456789"
	for _, tc := range []struct {
		method, token string
		status        int
	}{
		{http.MethodPost, token, http.StatusAccepted},
		{http.MethodGet, token, http.StatusMethodNotAllowed},
		{http.MethodPost, unknown, http.StatusNotFound},
	} {
		req, err := http.NewRequestWithContext(ctx, tc.method, e.worker.WebhookURL()+sdk.WebhookPath+tc.token, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%s %s: %d, want %d", tc.method, tc.token, resp.StatusCode, tc.status)
		}
	}
	if err := e.client.Cancel(ctx, run.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	logs := buf.String()
	if strings.Contains(logs, token) || strings.Contains(logs, unknown) {
		t.Fatalf("the log holds a token:\n%s", logs)
	}
	type entry struct {
		Msg, Method, Token string
		Status             int
		Duration           *float64
	}
	var got []entry
	for line := range strings.Lines(logs) {
		var en entry
		if json.Unmarshal([]byte(line), &en) == nil && en.Msg == "workflow: webhook request" {
			got = append(got, en)
		}
	}
	want := []entry{
		{Method: http.MethodPost, Token: redact.Token(token), Status: http.StatusAccepted},
		{Method: http.MethodGet, Token: redact.Token(token), Status: http.StatusMethodNotAllowed},
		{Method: http.MethodPost, Token: redact.Token(unknown), Status: http.StatusNotFound},
	}
	if len(got) != len(want) {
		t.Fatalf("%d request lines, want %d:\n%s", len(got), len(want), logs)
	}
	for i, w := range want {
		if g := got[i]; g.Method != w.Method || g.Token != w.Token || g.Status != w.Status || g.Duration == nil {
			t.Errorf("request %d logged %+v, want %+v with a duration", i, g, w)
		}
	}
}
