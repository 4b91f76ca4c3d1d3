package webui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// post sends a form as a browser on the dashboard's page would, less what
// the case leaves out; it does not follow the redirect.
func (f *fixture) post(path string, form url.Values, cookie, origin string) (int, string, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "skein_csrf", Value: cookie})
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// TestPages: the list shows every run with its status; a run page shows
// the summary, the timeline rows, steps with their errors, the hook's
// resume form, the stream; a user's <script> is text, never markup.
func TestPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	code, body := f.get("/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	for _, id := range []string{f.done, f.failed, f.running, f.sleeping, f.approval, f.evil} {
		if !strings.Contains(body, `href="/runs/`+id+`"`) {
			t.Errorf("the list lacks run %s", id)
		}
	}
	for _, tc := range []struct {
		name, id string
		want     []string
	}{
		{"completed", f.done, []string{"greeting", "completed", `&#34;hello world&#34;`, `<td class="name">greet</td>`, "Rerun"}},
		{"failed", f.failed, []string{"failed", "exploded on purpose", `<td class="name">explode</td>`}},
		{"running", f.running, []string{"running", "Cancel run", "started\n", `data-stream="/runs/` + f.running + `/stream?from=1&amp;ns="`,
			`data-events="/events?after=`}},
		{"sleeping", f.sleeping, []string{"sleep 1h0m", "Sleeps"}},
		{"hook", f.approval, []string{"hook approve-1", `name="payload"`, `action="/runs/` + f.approval + `/resume"`}},
		{"escaped", f.evil, []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "stream says &lt;script&gt;", "exploded on &lt;script&gt;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body := f.get("/runs/" + tc.id)
			if code != http.StatusOK {
				t.Fatalf("GET = %d\n%s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if live := strings.Contains(body, "data-events="); live == (tc.name == "completed" || tc.name == "failed" || tc.name == "escaped") {
				t.Errorf("live feed on the page: %v (a finished run has none, a live one has)", live)
			}
			if strings.Contains(body, "<script>alert") {
				t.Errorf("page holds the user's <script> as markup")
			}
			if n := strings.Count(body, "<script"); n != 1 {
				t.Errorf("page has %d script elements, want the dashboard's one", n)
			}
		})
	}
	// A webhook's token is the credential its URL needs: shown redacted.
	hooks, err := f.w.ListHooks(context.Background(), &world.ListHooksParams{RunID: f.webhook})
	if err != nil || len(hooks.Items) != 1 {
		t.Fatalf("the webhook run's hooks: %v %v", hooks, err)
	}
	secret := hooks.Items[0].Token
	page := mustGet(f, "/runs/"+f.webhook)
	if strings.Contains(page, secret) || !strings.Contains(page, "webhook "+redact.Token(secret)) {
		t.Errorf("the webhook's token is not redacted on its run page")
	}
	if strings.Contains(page, `name="payload"`) {
		t.Errorf("a webhook has a resume form: it takes HTTP requests, not JSON payloads")
	}
	for _, p := range []string{"/runs/wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T", "/runs/nope", "/nowhere"} {
		if code, _ := f.get(p); code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, code)
		}
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// TestActions: every action needs the CSRF cookie, the same token in the
// form and a same-host Origin; with them, cancel, resume and rerun act.
func TestActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	origin := f.srv.URL
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {token}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	cancel := "/runs/" + f.sleeping + "/cancel"
	for _, tc := range []struct {
		name           string
		form           url.Values
		cookie, origin string
	}{
		{"no token", url.Values{}, token, origin},
		{"no cookie", form(), "", origin},
		{"token mismatch", url.Values{"csrf": {strings.Repeat("f", 64)}}, token, origin},
		{"no origin", form(), token, ""},
		{"other origin", form(), token, "http://evil.example"},
	} {
		code, _, body := f.post(cancel, tc.form, tc.cookie, tc.origin)
		if code != http.StatusForbidden || !strings.Contains(body, "Refused") {
			t.Errorf("%s: POST = %d, want 403:\n%s", tc.name, code, body)
		}
	}
	if r, _ := f.w.GetRun(context.Background(), &world.GetRunParams{RunID: f.sleeping}); r.Status.Terminal() {
		t.Fatalf("a refused cancel cancelled the run: %s", r.Status)
	}

	// The page hands out the token the forms carry.
	_, page := f.get("/runs/" + f.sleeping)
	if m := csrfRE.FindStringSubmatch(page); m == nil {
		t.Fatal("the run page has no CSRF field")
	}
	if !strings.Contains(page, `name="compensate"`) {
		t.Fatal("the cancel form has no compensate checkbox")
	}
	code, loc, body := f.post(cancel, form("reason", "enough", "compensate", "on"), token, origin)
	if code != http.StatusSeeOther || loc != "/runs/"+f.sleeping+"?done=cancel" {
		t.Fatalf("cancel = %d %q\n%s", code, loc, body)
	}
	f.await(f.sleeping, world.RunStatusCancelled)
	if r, _ := f.w.GetRun(context.Background(), &world.GetRunParams{RunID: f.sleeping}); !r.Compensate {
		t.Error("the cancel's compensate box was ticked, but run_cancelled does not ask for compensation")
	}

	hook := regexp.MustCompile(`name="hook" value="([^"]+)"`).FindStringSubmatch(mustGet(f, "/runs/"+f.approval))
	if hook == nil {
		t.Fatal("the hook has no resume form")
	}
	if code, _, body := f.post("/runs/"+f.approval+"/resume", form("hook", hook[1], "payload", "{nope"), token, origin); code != http.StatusBadRequest || !strings.Contains(body, "not JSON") {
		t.Errorf("resume with bad JSON = %d\n%s", code, body)
	}
	if code, _, body := f.post("/runs/"+f.approval+"/resume", form("hook", hook[1], "payload", `{"by":"ann"}`), token, origin); code != http.StatusSeeOther {
		t.Fatalf("resume = %d\n%s", code, body)
	}
	f.await(f.approval, world.RunStatusCompleted)
	if !strings.Contains(mustGet(f, "/runs/"+f.approval), "approved by ann") {
		t.Error("the resumed run's output is not on its page")
	}

	code, loc, body = f.post("/runs/"+f.failed+"/rerun", form(), token, origin)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/wrun_") || strings.Contains(loc, f.failed) {
		t.Fatalf("rerun = %d %q\n%s", code, loc, body)
	}
	rerun := strings.TrimPrefix(strings.TrimSuffix(loc, "?done=rerun"), "/runs/")
	f.await(rerun, world.RunStatusFailed)
	for _, tc := range []struct{ path, want string }{
		{"/runs/" + f.done + "/cancel", "nothing to cancel"},
		{"/runs/" + f.running + "/rerun", "not finished"},
		{"/runs/" + f.running + "/retry", "not held"},
	} {
		if code, _, body := f.post(tc.path, form(), token, origin); code != http.StatusConflict || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s = %d, want 409 %q", tc.path, code, tc.want)
		}
	}
}

func mustGet(f *fixture, path string) string {
	f.t.Helper()
	code, body := f.get(path)
	if code != http.StatusOK {
		f.t.Fatalf("GET %s = %d", path, code)
	}
	return body
}

// TestReadOnly: a read-only dashboard shows why, has no action forms, and
// refuses actions with 403 even with a valid token.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{ReadOnlyReason: "a worker holds the store"})
	body := mustGet(f, "/runs/"+f.approval)
	if !strings.Contains(body, "read-only: a worker holds the store") {
		t.Error("the page does not say it is read-only and why")
	}
	if strings.Contains(body, "<form method=\"post\"") {
		t.Error("a read-only page has action forms")
	}
	code, _, resp := f.post("/runs/"+f.sleeping+"/cancel", url.Values{"csrf": {token}}, token, f.srv.URL)
	if code != http.StatusForbidden || !strings.Contains(resp, "a worker holds the store") {
		t.Errorf("cancel on a read-only dashboard = %d\n%s", code, resp)
	}
}

// TestHosts: with Config.Hosts, a request naming another host (a DNS
// rebinding page) is refused.
func TestHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{Hosts: webui.LoopbackHosts()})
	if code, _ := f.get("/"); code != http.StatusOK {
		t.Errorf("GET / on 127.0.0.1 = %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET with Host evil.example = %d, want 403", resp.StatusCode)
	}
}

// TestStreamEvents: the stream feed sends chunks as the run writes them,
// resumes after Last-Event-ID, and escapes markup in its JSON.
func TestStreamEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/runs/"+f.running+"/stream?from=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func(prefix string) string {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("the feed ended before a %q line: %v", prefix, lines.Err())
		return ""
	}
	if l := next("data:"); l != `data: {"text":"started\n"}` {
		t.Errorf("first chunk %q", l)
	}
	f.chunks <- "<b>live</b>"
	if l := next("id:"); l != "id: 1" {
		t.Errorf("second chunk's id %q", l)
	}
	if l := next("data:"); l != `data: {"text":"\u003cb\u003elive\u003c/b\u003e"}` {
		t.Errorf("second chunk %q", l)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/runs/"+f.running+"/stream", nil)
	req.Header.Set("Last-Event-ID", "0")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	lines = bufio.NewScanner(resp2.Body)
	if l := next("id:"); l != "id: 1" {
		t.Errorf("after Last-Event-ID 0 the feed starts at %q", l)
	}
}

// TestLiveEvents: the run page's feed (the live subscription, mounted at
// /events) sends the events committed after the page was drawn.
func TestLiveEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	m := regexp.MustCompile(`data-events="([^"]+)"`).FindStringSubmatch(mustGet(f, "/runs/"+f.running))
	if m == nil {
		t.Fatal("the running run's page has no live feed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+strings.ReplaceAll(m[1], "&amp;", "&"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET the feed = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	f.finish()
	var types []string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && !slices.Contains(types, "run_completed") {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			var ev struct {
				Type string `json:"eventType"`
			}
			_ = json.Unmarshal([]byte(data), &ev)
			types = append(types, ev.Type)
		}
	}
	if len(types) == 0 || types[0] != "step_completed" || !slices.Contains(types, "run_completed") {
		t.Errorf("the feed sent %v, want step_completed first (nothing from before the page) and run_completed", types)
	}
}
