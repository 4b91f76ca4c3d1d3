package webui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/world"
)

// chromiumPath finds the browser: $SKEIN_CHROMIUM, else chromium on PATH
// (scripts/chromium.sh installs it). Without one the test skips, or fails
// when SKEIN_REQUIRE_BROWSER=1 (as make test sets it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SKEIN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium: install it with `bash scripts/chromium.sh install` (as root) or set SKEIN_CHROMIUM; `make test` does"
	if os.Getenv("SKEIN_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (SKEIN_REQUIRE_BROWSER=1: the browser test may not skip)")
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium for the test, with a profile of its
// own.
func browser(t *testing.T) context.Context {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write the
	// profile for a moment after the browser ends, which fails its check.
	profile, err := os.MkdirTemp("", "skein-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", profile)
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// TestBrowser drives the dashboard in headless Chromium over a local world
// whose worker runs in this process: the list, a click through to a run,
// its timeline, a stream that grows while the page is open and a status
// that follows the run's end without a reload, a hook resumed
// from its form until the run finishes, a user's <script> shown as text,
// and a POST without the CSRF token refused. With SKEIN_UI_SCREENSHOT=1 it
// saves docs/ui.png.
func TestBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	f := newFixture(t, webui.Config{})
	var dialogs atomic.Int32
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
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
	// eventually polls cond every 50ms for up to 15s.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}

	// The list shows every run; a click opens the running one.
	run("open the list", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	list := text("#runs")
	for _, want := range []string{f.done, f.failed, f.running, f.sleeping, f.approval, f.evil, "greeting", "ticker", "sleeper", "completed", "failed", "running"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	// The list follows new runs: a note offers to draw it again.
	another := f.start("greeting", "later")
	eventually("the list notes the new run", func() bool { return strings.Contains(text("#live-note"), "new event") })
	f.await(another, world.RunStatusCompleted)
	run("click through to the running run", chromedp.Click(`a[href="/runs/`+f.running+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#timeline", chromedp.ByQuery))
	var rows int
	run("count timeline rows", chromedp.Evaluate(`document.querySelectorAll("#timeline tr.trow").length`, &rows))
	if rows != 1 || !strings.Contains(text("#timeline"), "tick") {
		t.Errorf("the running run's timeline has %d rows: %s", rows, text("#timeline"))
	}

	// The stream grows while the page is open, without a reload.
	run("mark the page", chromedp.Evaluate(`window.skeinMark = 42`, nil))
	eventually("the stream shows its first chunk", func() bool { return strings.Contains(text("pre.stream-text"), "started") })
	for _, chunk := range []string{"chunk one\n", "chunk <i>two</i>\n"} {
		f.chunks <- chunk
		eventually("the stream shows "+chunk, func() bool { return strings.Contains(text("pre.stream-text"), strings.TrimSpace(chunk)) })
	}
	// The run ends while the page is open: its status follows (the live
	// subscription), the stream says it is closed.
	f.finish()
	eventually("the page shows the run completed", func() bool { return text("#run-status") == "completed" })
	eventually("the stream shows it is closed", func() bool { return strings.Contains(text("div.stream h3"), "closed") })
	// The end commits run_deactivated with run_completed (nothing of the
	// run runs any more): the note's last event is that one.
	eventually("the live note names the run's rest", func() bool { return strings.Contains(text("#live-note"), "run_deactivated") })
	var mark int
	run("read the mark", chromedp.Evaluate(`window.skeinMark || 0`, &mark))
	if mark != 42 {
		t.Error("the page reloaded to show the stream or the status; it should have updated in place")
	}

	// The fulfilment run's timeline: a retried step, a fan-out, a sleep.
	run("open the order", chromedp.Navigate(f.srv.URL+"/runs/"+f.order), chromedp.WaitVisible("#timeline", chromedp.ByQuery))
	run("count order rows", chromedp.Evaluate(`document.querySelectorAll("#timeline tr.trow").length`, &rows))
	if tl := text("#timeline"); rows != 5 || !strings.Contains(tl, `reserve-stock "TEE"`) || !strings.Contains(tl, "503 Service Unavailable") {
		t.Errorf("the order's timeline has %d rows:\n%s", rows, tl)
	}
	if os.Getenv("SKEIN_UI_SCREENSHOT") == "1" {
		var png []byte
		run("screenshot", chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join("..", "docs", "ui.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Resume the hook from its form; the run finishes.
	run("resume the hook", chromedp.Navigate(f.srv.URL+"/runs/"+f.approval),
		chromedp.SetValue(`form.resume textarea[name="payload"]`, `{"by": "the browser"}`, chromedp.ByQuery),
		chromedp.Click(`form.resume button`, chromedp.ByQuery), chromedp.WaitVisible("#notice", chromedp.ByQuery))
	eventually("the resumed run completes", func() bool {
		run("reload", chromedp.Reload(), chromedp.WaitVisible("#run-status", chromedp.ByQuery))
		return text("#run-status") == "completed"
	})
	if out := text("#run-output"); !strings.Contains(out, "approved by the browser") {
		t.Errorf("the run's output is %q", out)
	}
	f.await(f.approval, world.RunStatusCompleted)

	// A user's <script> is text: visible, never run.
	run("open the evil run", chromedp.Navigate(f.srv.URL+"/runs/"+f.evil), chromedp.WaitVisible("#run-input", chromedp.ByQuery))
	var scripts int
	run("count scripts", chromedp.Evaluate(`document.querySelectorAll("script").length`, &scripts))
	body := text("body")
	if !strings.Contains(text("#run-input"), xss) || !strings.Contains(body, "stream says "+xss) || !strings.Contains(body, "exploded on "+xss) {
		t.Errorf("the <script> payload is not shown as text:\n%s", body)
	}
	if scripts != 1 || dialogs.Load() != 0 {
		t.Errorf("the page has %d script elements and opened %d dialogs: a payload ran", scripts, dialogs.Load())
	}

	// A POST from the page's own script without the CSRF field is refused.
	var status int
	run("post without a token", chromedp.Evaluate(`fetch("/runs/`+f.sleeping+`/cancel", {method: "POST"}).then(r => r.status)`, &status,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if status != 403 {
		t.Errorf("a POST without the CSRF token answered %d, want 403", status)
	}
}
