package handler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// apiGatewayRequest is an API Gateway HTTP API (payload format 2.0) event
// for method on token's webhook.
func apiGatewayRequest(method, token string) events.APIGatewayV2HTTPRequest {
	path := workflow.WebhookPath + token
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path,
		Headers: map[string]string{"origin": "https://example.com", "access-control-request-method": "POST"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc.execute-api.us-east-1.amazonaws.com", RequestID: "r2", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.2"},
		},
	}
}

// invokeRaw sends any event through aws-lambda-go's JSON path.
func (b *webhookBundle) invokeRaw(t *testing.T, ev any) events.LambdaFunctionURLResponse {
	t.Helper()
	payload, err := json.Marshal(ev)
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

// TestWebhookMethodsLambda sends each method with an empty body to a live
// webhook, as a Function URL event and as an API Gateway HTTP API event:
// only POST, PUT and PATCH deliver. OPTIONS (a CORS preflight) is answered
// 204 and the others 405, with Allow, and the webhook still takes the POST
// that follows.
func TestWebhookMethodsLambda(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	type shape struct {
		name  string
		event func(method, token string) any
	}
	shapes := []shape{
		{"function-url", func(m, tok string) any { return urlRequest(m, tok, "", false) }},
		{"api-gateway-v2", func(m, tok string) any { return apiGatewayRequest(m, tok) }},
	}
	tests := []struct {
		method  string
		status  int
		deliver bool
	}{
		{http.MethodGet, http.StatusMethodNotAllowed, false},
		{http.MethodHead, http.StatusMethodNotAllowed, false},
		{http.MethodDelete, http.StatusMethodNotAllowed, false},
		{http.MethodOptions, http.StatusNoContent, false},
		{"", http.StatusMethodNotAllowed, false}, // no method in the event: taken as GET
		{http.MethodPost, http.StatusAccepted, true},
		{http.MethodPut, http.StatusAccepted, true},
		{http.MethodPatch, http.StatusAccepted, true},
	}
	for _, sh := range shapes {
		for _, tc := range tests {
			t.Run(sh.name+"/"+tc.method, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				run, err := webhooked.Start(ctx, b.client, "default")
				if err != nil {
					t.Fatal(err)
				}
				token := b.token(t, run.ID())
				resp := b.invokeRaw(t, sh.event(tc.method, token))
				if resp.StatusCode != tc.status || resp.Body != "" {
					t.Errorf("%d %q, want %d and no body", resp.StatusCode, resp.Body, tc.status)
				}
				if !tc.deliver && resp.Headers["Allow"] != sdk.WebhookAllow {
					t.Errorf("Allow %q, want %q", resp.Headers["Allow"], sdk.WebhookAllow)
				}
				want := tc.method + " "
				if !tc.deliver {
					// The handler queues what it delivers: a method that
					// delivers nothing has queued nothing either.
					if got := countEvents(t, b.w, run.ID(), world.EventHookReceived); len(got) != 0 {
						t.Fatalf("hook_received %v, want none", got)
					}
					if resp := b.call(t, urlRequest(http.MethodPost, token, "after", false)); resp.StatusCode != http.StatusAccepted {
						t.Fatalf("POST after: %d", resp.StatusCode)
					}
					want = "POST after"
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if got, err := run.Result(rctx); err != nil || got != want {
					t.Errorf("result %q, %v; want %q", got, err, want)
				}
				// One request delivered, committed once.
				if got := countEvents(t, b.w, run.ID(), world.EventHookReceived); len(got) != 1 {
					t.Errorf("hook_received %v, want 1", got)
				}
			})
		}
	}
}
