package webui_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestWebhookTokenNotShown: a webhook's token does not show on the run page
// or in its live feed, neither in the request a delivery records nor in a
// request recorded with the token in its URL (as earlier versions did).
func TestWebhookTokenNotShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A delivery through the webhook handler.
	hooks, err := f.w.ListHooks(ctx, &world.ListHooksParams{RunID: f.webhook})
	if err != nil || len(hooks.Items) != 1 {
		t.Fatalf("the webhook run's hooks: %v %v", hooks, err)
	}
	secret := hooks.Items[0].Token
	wh := httptest.NewServer(worker.WebhookHandler(f.client))
	defer wh.Close()
	resp, err := http.Post(wh.URL+workflow.WebhookPath+secret+"?order=7", "application/json", strings.NewReader(`{"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook delivery = %d", resp.StatusCode)
	}
	f.await(f.webhook, world.RunStatusCompleted)
	if page := mustGet(f, "/runs/"+f.webhook); strings.Contains(page, secret) || !strings.Contains(page, "order=7") {
		t.Errorf("the run page shows the delivered request's token (or not the request):\n%s", page)
	}

	// A request recorded with the token in its URL, delivered while the
	// page's live feed is open.
	const legacy = "legacy-webhook-token-7Q2X9"
	run := world.NewIDSource(nil, nil).New(world.PrefixRun)
	hook := world.NewIDSource(nil, nil).New(world.PrefixHook)
	appendEvents(t, f.w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "legacy"}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: legacy, IsWebhook: true}})
	m := regexp.MustCompile(`data-events="([^"]+)"`).FindStringSubmatch(mustGet(f, "/runs/"+run))
	if m == nil {
		t.Fatal("the run's page has no live feed")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+strings.ReplaceAll(m[1], "&amp;", "&"), nil)
	feed, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Body.Close()
	payload := `{"method":"POST","url":"https://hooks.example` + workflow.WebhookPath + legacy + `?order=8","body":"e30="}`
	appendEvents(t, f.w, run, world.EventInput{CorrelationID: hook, Data: &world.HookReceived{Token: legacy, Payload: []byte(payload)}})
	lines := bufio.NewScanner(feed.Body)
	for lines.Scan() {
		l := lines.Text()
		if strings.Contains(l, legacy) {
			t.Errorf("the live feed shows the token: %s", l)
		}
		if strings.Contains(l, "hook_received") {
			if !strings.Contains(l, "order=8") {
				t.Errorf("the live feed lost the request: %s", l)
			}
			break
		}
	}
	if page := mustGet(f, "/runs/"+run); strings.Contains(page, legacy) || !strings.Contains(page, "order=8") {
		t.Errorf("the run page shows a recorded request's token (or not the request):\n%s", page)
	}
}

func appendEvents(t *testing.T, w world.World, run string, evs ...world.EventInput) {
	t.Helper()
	if _, err := w.Append(context.Background(), &world.AppendParams{RunID: run, Events: evs}); err != nil {
		t.Fatal(err)
	}
}

// TestRerunLeavesScheduleAttributes: a rerun of a schedule's run is not a
// firing of the schedule: the new run has the run's attributes but the
// SDK's own (worker.AttrSchedule, AttrScheduledTime).
func TestRerunLeavesScheduleAttributes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	run := world.NewIDSource(nil, nil).New(world.PrefixRun)
	attrs := map[string]string{worker.AttrSchedule: "nightly", worker.AttrScheduledTime: "2026-01-01T00:00:00Z", "team": "ops"}
	appendEvents(t, f.w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "greeting", Input: []byte(`"x"`), Attributes: attrs}},
		world.EventInput{Data: &world.RunStarted{}}, world.EventInput{Data: &world.RunCompleted{Output: []byte(`"hello x"`)}})
	code, loc, body := f.post("/runs/"+run+"/rerun", url.Values{"csrf": {token}}, token, f.srv.URL)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/wrun_") {
		t.Fatalf("rerun = %d %q\n%s", code, loc, body)
	}
	id := strings.TrimPrefix(strings.TrimSuffix(loc, "?done=rerun"), "/runs/")
	got, err := f.w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["team"] != "ops" || len(got.Attributes) != 1 {
		t.Errorf("the rerun's attributes %v; want team=ops alone", got.Attributes)
	}
}
