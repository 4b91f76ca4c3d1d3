package webui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserCompensation drives the dashboard over runs with
// compensations: the list marks the run whose compensation failed; its
// page shows the counts, the compensations' timeline rows and, in an
// opened step, the compensation's attempts.
func TestBrowserCompensation(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	r := newCompRuns(t)
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
	run("open the list", chromedp.Navigate(r.url+"/"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	var marks []string
	run("read the marks", chromedp.Evaluate(`[...document.querySelectorAll("#runs .comp-mark")].map(e => e.textContent)`, &marks))
	if strings.Join(marks, ",") != "compensating,compensation failed" {
		t.Errorf("the list's compensation marks are %q", marks)
	}
	run("click through to the failed run", chromedp.Click(`a[href="/runs/`+r.failed+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#timeline", chromedp.ByQuery))
	if got := text("#run-compensations"); got != "1 succeeded, 1 failed (asked for by the run's failure)" {
		t.Errorf("the run's compensations read %q", got)
	}
	var comps []string
	run("read the compensation rows", chromedp.Evaluate(`[...document.querySelectorAll("#timeline tr.comp td.name")].map(e => e.textContent)`, &comps))
	if strings.Join(comps, ",") != "undo reserve: release,undo charge: refund" {
		t.Errorf("the timeline's compensation rows are %q", comps)
	}
	sel := `details.step:first-of-type`
	run("open the first step", chromedp.Click(sel+` summary`, chromedp.ByQuery), chromedp.WaitVisible(sel+` .comp table`, chromedp.ByQuery))
	if got := text(sel + ` .comp`); !strings.Contains(got, "Compensation refund") || !strings.Contains(got, "bank down") || !strings.Contains(got, "attempt 2") {
		t.Errorf("the opened step's compensation reads %q", got)
	}
}
