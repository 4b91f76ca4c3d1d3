package webui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/skeinflow/skein/webui"
)

// TestBrowserDeadLetters drives the dead-letter page in headless
// Chromium: the nav link leads to it, it shows what a redrive would
// resume, and its button (a form with the page's CSRF token, sent by the
// browser with its cookie and Origin) moves the letters and says so.
func TestBrowserDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	q := &fakeDLQ{}
	f := newFixture(t, webui.Config{DeadLetters: q})
	q.letters = []webui.DeadLetter{
		{MessageID: "m-live", RunID: f.sleeping, Workflow: "sleeper", Status: "running", Redrive: "resumes the run", Moves: true},
		{MessageID: "m-junk", Redrive: "stays: not a Skein message"},
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}
	run("open the list", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	run("follow the dead-letter link", chromedp.Click("#nav-dlq", chromedp.ByQuery), chromedp.WaitVisible("#dlq", chromedp.ByQuery))
	table := text("#dlq")
	for _, want := range []string{"m-live", f.sleeping, "sleeper", "running", "resumes the run", "m-junk", "stays: not a Skein message"} {
		if !strings.Contains(table, want) {
			t.Errorf("the dead-letter table lacks %q:\n%s", want, table)
		}
	}
	run("redrive", chromedp.Click("#redrive", chromedp.ByQuery), chromedp.WaitVisible("#notice", chromedp.ByQuery))
	if got := text("#notice"); got != "Moved 1 dead letters back to the work queue; 1 left in the dead-letter queue." {
		t.Errorf("the notice after the redrive reads %q", got)
	}
	if n := q.redriven(); n != 1 {
		t.Errorf("the button redrove %d times, want 1", n)
	}
	if table := text("#dlq"); strings.Contains(table, "m-live") || !strings.Contains(table, "m-junk") {
		t.Errorf("the table after the redrive:\n%s", table)
	}
	var buttons int
	run("count redrive buttons", chromedp.Evaluate(`document.querySelectorAll("#redrive").length`, &buttons))
	if buttons != 0 {
		t.Error("a redrive button is offered with nothing left to move")
	}
}
