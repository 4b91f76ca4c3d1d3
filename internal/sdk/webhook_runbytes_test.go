package sdk_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// A token holder's flood stops at the run's MaxRunBytes: the delivery
// that would pass it answers 413 with a problem+json body (code
// LIMIT_EXCEEDED), not a 5xx, and every delivery accepted before it stays
// in the log; a body over the webhook's body limit gets the same problem.
func TestWebhookFloodStopsAtRunBytes(t *testing.T) {
	t.Parallel()
	wf := sdk.New("webhook-flood", func(ctx sdk.Context, _ struct{}) (int, error) {
		wh := sdk.NewWebhook(ctx, sdk.WebhookOptions{})
		n := 0
		for {
			if _, err := wh.Receive(ctx); err != nil {
				return n, err
			}
			n++
		}
	})
	e := newEnvWith(t, envOptions{webhooks: true, limits: world.Limits{MaxPayload: 2 << 10, MaxRunBytes: 16 << 10}}, wf)
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
	post := func(n int) (int, map[string]any, string) {
		t.Helper()
		resp, err := http.Post(url, "text/plain", strings.NewReader(strings.Repeat("b", n)))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		var p map[string]any
		_ = json.Unmarshal(b, &p)
		return resp.StatusCode, p, resp.Header.Get("Content-Type")
	}
	wantProblem := func(what string, code int, p map[string]any, ct string) {
		t.Helper()
		if code != http.StatusRequestEntityTooLarge || ct != "application/problem+json" || p["code"] != world.CodeLimitExceeded || p["status"] != float64(413) || p["detail"] == "" {
			t.Fatalf("%s: %d %s %v, want 413 with a problem+json body of code %s", what, code, ct, p, world.CodeLimitExceeded)
		}
	}
	code, p, ct := post(3 << 10)
	wantProblem("a body over the body limit", code, p, ct)
	accepted := 0
	for {
		code, p, ct := post(1 << 10)
		if code == http.StatusAccepted {
			accepted++
			if accepted > 16 {
				t.Fatalf("%d deliveries of 1 KiB accepted into a run of MaxRunBytes 16 KiB", accepted)
			}
			continue
		}
		wantProblem("the delivery past MaxRunBytes", code, p, ct)
		if !strings.Contains(p["detail"].(string), "run bytes") {
			t.Fatalf("detail %q, want it to name the run bytes limit", p["detail"])
		}
		break
	}
	if accepted == 0 {
		t.Fatal("no delivery accepted")
	}
	got := 0
	for _, ev := range e.events(run.ID()) {
		if ev.Type() == world.EventHookReceived {
			got++
		}
	}
	if got != accepted {
		t.Fatalf("the log holds %d deliveries, want the %d accepted", got, accepted)
	}
	if r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: run.ID()}); err != nil || r.PayloadBytes > 16<<10 || r.Status.Terminal() {
		t.Fatalf("run %+v, %v: want it live, within MaxRunBytes", r, err)
	}
}
