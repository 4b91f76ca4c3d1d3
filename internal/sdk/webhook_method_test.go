package sdk_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// oneRequest waits for one request on a webhook and returns its method and
// body.
var oneRequest = sdk.New("one-request", func(ctx sdk.Context, _ struct{}) (string, error) {
	req, err := sdk.NewWebhook(ctx, sdk.WebhookOptions{}).Receive(ctx)
	if err != nil {
		return "", err
	}
	return req.Method + " " + string(req.Body), nil
})

// webhookToken waits for the run's webhook and returns its token.
func (e *env) webhookToken(ctx context.Context, runID string) string {
	e.t.Helper()
	var token string
	waitFor(e.t, "the webhook of "+runID, func() bool {
		p, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: runID})
		if err != nil || len(p.Items) == 0 {
			return false
		}
		token = p.Items[0].Token
		return true
	})
	return token
}

// TestWebhookMethods sends each method, with an empty body, to a live
// webhook through the local worker's server: only POST, PUT and PATCH
// deliver; OPTIONS is answered 204 and the others 405, with Allow, and the
// webhook still takes the POST that follows.
func TestWebhookMethods(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{webhooks: true}, oneRequest)
	tests := []struct {
		method  string
		status  int
		deliver bool
	}{
		{http.MethodGet, http.StatusMethodNotAllowed, false},
		{http.MethodHead, http.StatusMethodNotAllowed, false},
		{http.MethodDelete, http.StatusMethodNotAllowed, false},
		{http.MethodOptions, http.StatusNoContent, false},
		{http.MethodTrace, http.StatusMethodNotAllowed, false},
		{"PROPFIND", http.StatusMethodNotAllowed, false},
		{http.MethodPost, http.StatusAccepted, true},
		{http.MethodPut, http.StatusAccepted, true},
		{http.MethodPatch, http.StatusAccepted, true},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := oneRequest.Start(ctx, e.client, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			url := e.worker.WebhookURL() + sdk.WebhookPath + e.webhookToken(ctx, run.ID())
			req, err := http.NewRequestWithContext(ctx, tc.method, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("%s: %d, want %d", tc.method, resp.StatusCode, tc.status)
			}
			if !tc.deliver && resp.Header.Get("Allow") != sdk.WebhookAllow {
				t.Errorf("%s: Allow %q, want %q", tc.method, resp.Header.Get("Allow"), sdk.WebhookAllow)
			}
			if got := countEvents(e.events(run.ID()), world.EventHookReceived); got != btoi(tc.deliver) {
				t.Fatalf("%s: %d hook_received, want %d", tc.method, got, btoi(tc.deliver))
			}
			want := tc.method + " "
			if !tc.deliver {
				resp, err := http.Post(url, "text/plain", strings.NewReader("after"))
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
				want = "POST after"
			}
			if got, err := run.Result(ctx); err != nil || got != want {
				t.Errorf("%s: result %q, %v; want %q", tc.method, got, err, want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// echoingWorld fails token lookups for tokens starting with "fail-" with an
// error that quotes the token, as a store's error might.
type echoingWorld struct{ world.World }

func (w echoingWorld) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	if strings.HasPrefix(p.Token, "fail-") {
		return nil, fmt.Errorf("ThrottlingException reading token %s (injected)", p.Token)
	}
	return w.World.GetHookByToken(ctx, p)
}

// TestWebhookLogsNoToken: a failed token lookup is answered 503 (the sender
// retries; it is not an unknown token) and logged without the token.
func TestWebhookLogsNoToken(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	var logs bytes.Buffer
	c, err := sdk.NewClient(sdk.ClientConfig{World: echoingWorld{lw}, Registry: sdk.NewRegistry(),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	const token = "fail-0123456789abcdefghij"
	rec := httptest.NewRecorder()
	sdk.WebhookHandler(c).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, sdk.WebhookPath+token, strings.NewReader("x")))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("failed lookup: %d, want 503", rec.Code)
	}
	if logs.Len() == 0 || strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), redact.Token(token)) {
		t.Errorf("log %q: want the token's digest %s and never the token", logs.String(), redact.Token(token))
	}
}

// threeRequests receives three requests on one webhook, then disposes of it.
var threeRequests = sdk.New("three-requests", func(ctx sdk.Context, _ struct{}) ([]string, error) {
	wh := sdk.NewWebhook(ctx, sdk.WebhookOptions{})
	var got []string
	for range 3 {
		req, err := wh.Receive(ctx)
		if err != nil {
			return nil, err
		}
		got = append(got, string(req.Body))
	}
	wh.Dispose(ctx)
	return got, sdk.Sleep(ctx, time.Hour)
})

// TestWebhookTakesManyRequests: a webhook is not single-use. It takes every
// request until the workflow disposes of it; after that, 404.
func TestWebhookTakesManyRequests(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{webhooks: true}, threeRequests)
	ctx := e.ctx()
	run, err := threeRequests.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	url := e.worker.WebhookURL() + sdk.WebhookPath + e.webhookToken(ctx, run.ID())
	post := func(body string) int {
		resp, err := http.Post(url, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, b := range []string{"1", "2", "3"} {
		if code := post(b); code != http.StatusAccepted {
			t.Fatalf("request %s: %d, want 202", b, code)
		}
	}
	e.waitEvent(run.ID(), world.EventHookDisposed)
	if code := post("4"); code != http.StatusNotFound {
		t.Errorf("after Dispose: %d, want 404", code)
	}
	if n := countEvents(e.events(run.ID()), world.EventHookReceived); n != 3 {
		t.Errorf("%d hook_received, want 3", n)
	}
	if err := e.client.Cancel(ctx, run.ID(), "done"); err != nil {
		t.Fatal(err)
	}
}
