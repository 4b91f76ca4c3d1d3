package handler_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"github.com/skeinflow/skein/internal/knobs"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/lambdaio"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// webhookBundle runs the workflows with a local worker and serves webhooks
// with the handler under test.
type webhookBundle struct {
	w      *localworld.World
	client *client.Client
	fn     handler.WebhookHandler
	logs   *syncBuffer // the handler's log, JSON at debug level
}

func setupWebhook(t *testing.T) *webhookBundle { return setupWebhookWith(t, nil) }

// setupWebhookWith is setupWebhook with the handler's world wrapped.
func setupWebhookWith(t *testing.T, wrap func(world.World) world.World) *webhookBundle {
	t.Helper()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := workflow.NewRegistry()
	if err := reg.Register(allDefs...); err != nil {
		t.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: w, Registry: reg}, knobs.WithPollWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = w.Close() })
	var hw world.World = w
	if wrap != nil {
		hw = wrap(w)
	}
	logs := &syncBuffer{}
	fn, err := handler.NewWebhook(handler.Config{Worker: worker.Config{World: hw, Registry: reg, Logger: lambdaio.NewJSONLogger(logs, slogDebug)}})
	if err != nil {
		t.Fatal(err)
	}
	return &webhookBundle{w: w, client: wk.Client(), fn: fn, logs: logs}
}

// token waits for the run's webhook and returns its token.
func (b *webhookBundle) token(t *testing.T, runID string) string {
	t.Helper()
	limit := time.Now().Add(time.Minute) // a bound against a hang, not a timing judgement
	for time.Now().Before(limit) {
		p, err := b.w.ListHooks(context.Background(), &world.ListHooksParams{RunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 0 {
			return p.Items[0].Token
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the run created no webhook")
	return ""
}

// call sends a Function URL event through aws-lambda-go's JSON path.
func (b *webhookBundle) call(t *testing.T, req events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	t.Helper()
	payload, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := lambdaCtx(t, "req-webhook", 10*time.Second)
	defer cancel()
	out, err := lambda.NewHandler(b.fn).Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func urlRequest(method, token, body string, b64 bool) events.LambdaFunctionURLRequest {
	path := workflow.WebhookPath + url.PathEscape(token)
	return events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, RawQueryString: "a=1",
		Headers: map[string]string{"content-type": "text/plain", "x-custom": "v"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: "abc.lambda-url.us-east-1.on.aws", RequestID: "r1",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.1"},
		},
		Body: body, IsBase64Encoded: b64,
	}
}

func TestWebhookAnswers(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	ctx := context.Background()
	cases := []struct {
		mode       HookMode
		body       string
		b64        bool
		wantStatus int
		wantBody   string
		wantB64    bool
		wantHeader map[string]string
		wantResult string
	}{
		{mode: "default", body: "hello", wantStatus: http.StatusAccepted, wantResult: "POST hello"},
		{mode: "static", body: "aGk=", b64: true, wantStatus: http.StatusOK, wantBody: "thanks",
			wantHeader: map[string]string{"Content-Type": "text/plain"}, wantResult: "POST hi"},
		{mode: "binary", body: "x", wantStatus: http.StatusOK, wantBody: base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe}),
			wantB64: true, wantResult: "POST x"},
		{mode: "manual", body: "order 7", wantStatus: http.StatusCreated, wantBody: "got order 7",
			wantHeader: map[string]string{"X-Reply": "yes"}, wantResult: "POST order 7"},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			run, err := webhooked.Start(ctx, b.client, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			token := b.token(t, run.ID())
			resp := b.call(t, urlRequest(http.MethodPost, token, tc.body, tc.b64))
			if resp.StatusCode != tc.wantStatus || resp.Body != tc.wantBody || resp.IsBase64Encoded != tc.wantB64 {
				t.Errorf("response %d %q (base64 %v), want %d %q (base64 %v)", resp.StatusCode, resp.Body, resp.IsBase64Encoded,
					tc.wantStatus, tc.wantBody, tc.wantB64)
			}
			for k, v := range tc.wantHeader {
				if resp.Headers[k] != v {
					t.Errorf("header %s = %q, want %q (headers %v)", k, resp.Headers[k], v, resp.Headers)
				}
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if out, err := run.Result(rctx); err != nil || out != tc.wantResult {
				t.Errorf("result %q, %v; want %q", out, err, tc.wantResult)
			}
			// The run has ended: its token is gone.
			if resp := b.call(t, urlRequest(http.MethodPost, token, "again", false)); resp.StatusCode != http.StatusNotFound || resp.Body != "" {
				t.Errorf("after the run: %d %q, want 404 and no body", resp.StatusCode, resp.Body)
			}
		})
	}
}

func TestWebhookUnknownToken(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	resp := b.call(t, urlRequest(http.MethodPost, "no-such-token", "x", false))
	if resp.StatusCode != http.StatusNotFound || resp.Body != "" {
		t.Errorf("%d %q, want 404 and no body", resp.StatusCode, resp.Body)
	}
	// A plain hook's token is not a webhook's.
	run, err := plainHook.Start(context.Background(), b.client, "plain-token")
	if err != nil {
		t.Fatal(err)
	}
	if tok := b.token(t, run.ID()); tok != "plain-token" {
		t.Fatalf("token %q", tok)
	}
	if resp := b.call(t, urlRequest(http.MethodPost, "plain-token", "x", false)); resp.StatusCode != http.StatusNotFound || resp.Body != "" {
		t.Errorf("plain hook: %d %q, want 404 and no body", resp.StatusCode, resp.Body)
	}
	bad := b.call(t, events.LambdaFunctionURLRequest{RawPath: "/x", Body: "%%%", IsBase64Encoded: true,
		RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "POST"}}})
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("undecodable base64 body: %d, want 400", bad.StatusCode)
	}
}
