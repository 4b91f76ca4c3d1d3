package sdk_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var stalledHook = sdk.New("stalledHook", func(ctx sdk.Context, _ struct{}) (string, error) {
	req, err := sdk.NewWebhook(ctx, sdk.WebhookOptions{}).Receive(ctx)
	if err != nil {
		return "", err
	}
	return string(req.Body), nil
})

// TestWebhookBodyTimeout: a sender that stops sending its body is answered
// 408 once the body timeout has passed, and delivers nothing; the webhook
// still takes a request sent whole.
func TestWebhookBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, stalledHook)
	ctx := e.ctx()
	run, err := stalledHook.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventHookCreated)
	hooks, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: run.ID()})
	if err != nil || len(hooks.Items) != 1 {
		t.Fatalf("hooks %v, %v", hooks, err)
	}
	path := sdk.WebhookPath + hooks.Items[0].Token
	srv := httptest.NewServer(e.client.WebhookHandlerWithBodyTimeout(100 * time.Millisecond))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 100 bytes announced, 7 sent, and then nothing.
	if _, err := conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npartial")); err != nil {
		t.Fatal(err)
	}
	// Generous: the handler answers once its 100 ms have passed.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a stalled body: %d, want 408", resp.StatusCode)
	}
	for _, ev := range e.events(run.ID()) {
		if ev.Type() == world.EventHookReceived {
			t.Fatal("the stalled request was delivered")
		}
	}
	whole, err := http.Post(srv.URL+path, "text/plain", strings.NewReader("whole"))
	if err != nil {
		t.Fatal(err)
	}
	whole.Body.Close()
	if got, err := run.Result(ctx); whole.StatusCode != http.StatusAccepted || err != nil || got != "whole" {
		t.Fatalf("a whole request: %d, then %q, %v", whole.StatusCode, got, err)
	}
}
