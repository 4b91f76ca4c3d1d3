package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/world"
)

// echoingWorld fails every token lookup for tokens starting with "fail-"
// with an error that quotes the token, as a store's error might.
type echoingWorld struct{ world.World }

func (w echoingWorld) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	if strings.HasPrefix(p.Token, "fail-") {
		return nil, fmt.Errorf("ThrottlingException reading token %s (injected)", p.Token)
	}
	return w.World.GetHookByToken(ctx, p)
}

// TestWebhookLogsNoToken sends a webhook's token through every path that
// logs (a delivery, refused methods, a request after the run ended, an
// undecodable body, a failed lookup) and checks that the captured log never
// holds a token, only its digest.
func TestWebhookLogsNoToken(t *testing.T) {
	t.Parallel()
	b := setupWebhookWith(t, func(w world.World) world.World { return echoingWorld{w} })
	ctx := context.Background()
	run, err := webhooked.Start(ctx, b.client, "default")
	if err != nil {
		t.Fatal(err)
	}
	token := b.token(t, run.ID())
	const failing = "fail-0123456789abcdefghij"
	badBody := urlRequest(http.MethodPost, token, "%%%", true)
	badPath := urlRequest(http.MethodPost, token, "x", false)
	badPath.RawPath += "%zz"
	steps := []struct {
		name   string
		req    events.LambdaFunctionURLRequest
		status int
	}{
		{"refused method", urlRequest(http.MethodGet, token, "", false), http.StatusMethodNotAllowed},
		{"preflight", urlRequest(http.MethodOptions, token, "", false), http.StatusNoContent},
		{"undecodable body", badBody, http.StatusBadRequest},
		{"undecodable path", badPath, http.StatusBadRequest},
		{"failed lookup", urlRequest(http.MethodPost, failing, "x", false), http.StatusServiceUnavailable},
		{"delivery", urlRequest(http.MethodPost, token, "hello", false), http.StatusAccepted},
	}
	for _, s := range steps {
		if resp := b.call(t, s.req); resp.StatusCode != s.status {
			t.Fatalf("%s: %d, want %d", s.name, resp.StatusCode, s.status)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := run.Result(rctx); err != nil {
		t.Fatal(err)
	}
	if resp := b.call(t, urlRequest(http.MethodPost, token, "late", false)); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the run: %d", resp.StatusCode)
	}
	lines := b.logs.lines(t)
	if len(lines) < len(steps)+1 {
		t.Fatalf("%d log lines, want one per request at least", len(lines))
	}
	all := b.logs.b.String()
	for _, tok := range []string{token, failing} {
		if strings.Contains(all, tok) {
			t.Errorf("the log holds token %q:\n%s", tok, all)
		}
		if !strings.Contains(all, redact.Token(tok)) {
			t.Errorf("the log does not name token %q by its digest %s", tok, redact.Token(tok))
		}
	}
}
