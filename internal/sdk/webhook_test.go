package sdk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

type seenRequest struct {
	URL    string
	Method string
	Body   string
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	respond := sdk.NewStep("respond", func(ctx context.Context, req *sdk.Request) (struct{}, error) {
		return struct{}{}, req.Respond(ctx, sdk.Response{Status: 200, Body: []byte("Hello from webhook!")})
	})
	urls := make(chan []string, 1)
	publish := sdk.NewStep("publish-urls", func(ctx context.Context, u []string) (struct{}, error) {
		urls <- u
		return struct{}{}, nil
	})
	wf := sdk.New("webhookWorkflow", func(ctx sdk.Context, _ struct{}) ([]seenRequest, error) {
		plain := sdk.NewWebhook(ctx, sdk.WebhookOptions{})
		static := sdk.NewWebhook(ctx, sdk.WebhookOptions{Response: &sdk.Response{Status: 402, Body: []byte("Hello from static response!")}})
		manual := sdk.NewWebhook(ctx, sdk.WebhookOptions{Manual: true})
		if _, err := publish.Call(ctx, []string{plain.URL(), static.URL(), manual.URL()}); err != nil {
			return nil, err
		}
		var out []seenRequest
		for i, wh := range []*sdk.Webhook{plain, static, manual} {
			req, err := wh.Receive(ctx)
			if err != nil {
				return nil, err
			}
			if i == 2 {
				if _, err := respond.Call(ctx, req); err != nil {
					return nil, err
				}
			}
			out = append(out, seenRequest{URL: req.URL, Method: req.Method, Body: string(req.Body)})
		}
		return out, nil
	})
	e := newEnvWith(t, envOptions{webhooks: true}, wf, respond, publish)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	us := <-urls
	e.waitEvent(run.ID(), world.EventHookCreated)
	hooks, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
	if err != nil || len(hooks.Items) != 3 {
		t.Fatalf("hooks = %d, %v; want 3", len(hooks.Items), err)
	}
	base := e.worker.WebhookURL()
	for i, tc := range []struct {
		status int
		body   string
	}{
		{202, ""},
		{402, "Hello from static response!"},
		{200, "Hello from webhook!"},
	} {
		bodies := []string{`{"message":"one"}`, `{"message":"two"}`, `{"message":"three"}`}
		resp, err := http.Post(base+us[i], "application/json", strings.NewReader(bodies[i]))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status || string(b) != tc.body {
			t.Errorf("webhook %d: %d %q, want %d %q", i, resp.StatusCode, b, tc.status, tc.body)
		}
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != 3 {
		t.Fatalf("result = %+v, %v", got, err)
	}
	for i, want := range []string{`{"message":"one"}`, `{"message":"two"}`, `{"message":"three"}`} {
		// The recorded URL shows the token redacted: it is in the run's log.
		token, _ := url.PathUnescape(strings.TrimPrefix(us[i], sdk.WebhookPath))
		if got[i].Method != "POST" || got[i].Body != want || got[i].URL != sdk.WebhookPath+redact.Token(token) {
			t.Errorf("request %d = %+v", i, got[i])
		}
	}
	// The run's log as stored holds the tokens in its hook events only,
	// not in the requests it recorded.
	evs, err := e.lw.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		hr, ok := ev.Data.(*world.HookReceived)
		if !ok {
			continue
		}
		for i, tok := range hooks.Items {
			if strings.Contains(string(hr.Payload), tok.Token) {
				t.Errorf("the request delivered to hook %d is recorded with its token: %s", i, hr.Payload)
			}
		}
	}
	// The run ended: its webhooks are gone.
	resp, err := http.Post(base+us[0], "text/plain", strings.NewReader("late"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("after the run: %d", resp.StatusCode)
	}
}

func TestWebhookNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookWorkflow)
	ctx := e.ctx()
	run, err := hookWorkflow.Start(ctx, e.client, [2]string{"plain-hook", "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook", func() bool { _, err := e.client.GetHookByToken(ctx, "plain-hook"); return err == nil })
	h := sdk.WebhookHandler(e.client)
	for _, token := range []string{"invalid", "plain-hook"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", sdk.WebhookPath+token, strings.NewReader("{}")))
		if rec.Code != 404 || rec.Body.Len() != 0 {
			t.Errorf("token %q: %d %q, want 404 and an empty body", token, rec.Code, rec.Body.String())
		}
	}
	// The plain hook still works through the API, and received nothing.
	if _, err := e.client.ResumeHook(ctx, "plain-hook", hookPayload{Message: "via-server", Done: true}); err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != 1 || got[0].Message != "via-server" {
		t.Errorf("got %+v, %v", got, err)
	}
}

// A webhook request over the run's payload limit is refused with 413, not
// 503 (its sender would retry), whether its body alone is too large (not
// read past the limit) or the payload it makes is; nothing is recorded,
// and the run takes the next request.
func TestWebhookOverPayloadLimit(t *testing.T) {
	t.Parallel()
	wf := sdk.New("webhook-limit", func(ctx sdk.Context, _ struct{}) (string, error) {
		req, err := sdk.NewWebhook(ctx, sdk.WebhookOptions{}).Receive(ctx)
		if err != nil {
			return "", err
		}
		return string(req.Body), nil
	})
	e := newEnvWith(t, envOptions{webhooks: true, limits: world.Limits{MaxPayload: 2 << 10}}, wf)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventHookCreated)
	hooks, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
	if err != nil || len(hooks.Items) != 1 {
		t.Fatalf("hooks = %v, %v", hooks, err)
	}
	url := e.worker.WebhookURL() + sdk.WebhookPath + hooks.Items[0].Token
	for _, n := range []int{1500, 3 << 10} {
		resp, err := http.Post(url, "text/plain", strings.NewReader(strings.Repeat("b", n)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body of %d bytes: %d, want 413", n, resp.StatusCode)
		}
	}
	resp, err := http.Post(url, "text/plain", strings.NewReader("ok"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got, err := run.Result(ctx); err != nil || got != "ok" {
		t.Fatalf("result %q, %v; want the request that fitted", got, err)
	}
}
