package webui_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/skeinflow/skein/webui"
)

// fakeDLQ is a dead-letter queue in memory: a redrive moves the letters
// that move, which then leave it.
type fakeDLQ struct {
	mu       sync.Mutex
	letters  []webui.DeadLetter
	redrives int
	err      error
}

func (q *fakeDLQ) DeadLetters(_ context.Context, redrive bool) ([]webui.DeadLetter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := append([]webui.DeadLetter(nil), q.letters...)
	if !redrive {
		return out, q.err
	}
	q.redrives++
	var kept []webui.DeadLetter
	for i := range out {
		if out[i].Moves {
			out[i].Moved = true
		} else {
			kept = append(kept, out[i])
		}
	}
	q.letters = kept
	return out, nil
}

func (q *fakeDLQ) redriven() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.redrives
}

// TestDeadLetterPage: with a dead-letter queue, the dashboard lists each
// dead letter with the run a redrive would resume (workflow and status),
// a body that stays as text; the redrive form goes through the CSRF
// checks of every action and, accepted, moves the letters and says how
// many. Without a queue there is no page; read-only, no redrive.
func TestDeadLetterPage(t *testing.T) {
	t.Parallel()
	q := &fakeDLQ{}
	f := newFixture(t, webui.Config{DeadLetters: q})
	q.letters = []webui.DeadLetter{
		{MessageID: "m-live", RunID: f.sleeping, Workflow: "sleeper", Status: "running", Redrive: "resumes the run", Moves: true},
		{MessageID: "m-junk", Redrive: "stays: " + xss},
	}
	if !strings.Contains(mustGet(f, "/"), `href="/dlq"`) {
		t.Error("the list has no link to the dead-letter page")
	}
	page := mustGet(f, "/dlq")
	for _, want := range []string{"m-live", `href="/runs/` + f.sleeping + `"`, "sleeper", "running", "resumes the run",
		"m-junk", "stays: &lt;script&gt;", `action="/dlq/redrive"`, "Redrive 1 dead letter to the work queue"} {
		if !strings.Contains(page, want) {
			t.Errorf("the dead-letter page lacks %q", want)
		}
	}
	if strings.Contains(page, xss) {
		t.Error("a dead letter's text is markup on the page")
	}
	if csrfRE.FindStringSubmatch(page) == nil {
		t.Error("the redrive form has no CSRF field")
	}
	origin := f.srv.URL
	for _, tc := range []struct {
		name           string
		form           url.Values
		cookie, origin string
	}{
		{"no token", url.Values{}, token, origin},
		{"no cookie", url.Values{"csrf": {token}}, "", origin},
		{"other origin", url.Values{"csrf": {token}}, token, "http://evil.example"},
	} {
		if code, _, body := f.post("/dlq/redrive", tc.form, tc.cookie, tc.origin); code != http.StatusForbidden || !strings.Contains(body, "Refused") {
			t.Errorf("%s: POST /dlq/redrive = %d, want 403", tc.name, code)
		}
	}
	if n := q.redriven(); n != 0 {
		t.Fatalf("refused redrives moved letters %d times", n)
	}
	code, loc, body := f.post("/dlq/redrive", url.Values{"csrf": {token}}, token, origin)
	if code != http.StatusSeeOther || loc != "/dlq?done=redrive&moved=1&kept=1" || q.redriven() != 1 {
		t.Fatalf("redrive = %d %q (%d redrives)\n%s", code, loc, q.redriven(), body)
	}
	after := mustGet(f, loc)
	if !strings.Contains(after, "Moved 1 dead letters back to the work queue; 1 left in the dead-letter queue.") ||
		strings.Contains(after, "m-live") || !strings.Contains(after, "m-junk") || strings.Contains(after, `action="/dlq/redrive"`) {
		t.Errorf("the page after the redrive:\n%s", after)
	}
	q.mu.Lock()
	q.err = errors.New("the queue is unreachable")
	q.mu.Unlock()
	if !strings.Contains(mustGet(f, "/dlq"), "Reading the dead-letter queue failed: the queue is unreachable") {
		t.Error("a failed read is not on the page")
	}
}

// TestDeadLetterPageOff: without a queue, no page and no link; on a
// read-only dashboard, the list without the form, and a redrive refused.
func TestDeadLetterPageOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, webui.Config{})
	if code, _ := f.get("/dlq"); code != http.StatusNotFound {
		t.Errorf("GET /dlq without a dead-letter queue = %d, want 404", code)
	}
	if strings.Contains(mustGet(f, "/"), `href="/dlq"`) {
		t.Error("a dashboard without a dead-letter queue links to its page")
	}
	q := &fakeDLQ{letters: []webui.DeadLetter{{MessageID: "m", RunID: "wrun_x", Redrive: "resumes the run", Moves: true}}}
	ro := newFixture(t, webui.Config{DeadLetters: q, ReadOnlyReason: "a worker holds the store"})
	if page := mustGet(ro, "/dlq"); !strings.Contains(page, "resumes the run") || strings.Contains(page, `action="/dlq/redrive"`) {
		t.Errorf("the read-only dead-letter page:\n%s", page)
	}
	if code, _, _ := ro.post("/dlq/redrive", url.Values{"csrf": {token}}, token, ro.srv.URL); code != http.StatusForbidden || q.redriven() != 0 {
		t.Errorf("a redrive on a read-only dashboard = %d (%d redrives), want 403 and none", code, q.redriven())
	}
}
