package webui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/webui"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// compRuns is a store written bypassing any worker: a failed run whose end
// asked for compensation (charge compensated after a retry, reserve's
// compensation failed for good, ship owes none), a cancelled run whose
// compensation is still owed, a completed run with none, a completed run
// whose compensable step was kept; and the dashboard over it.
type compRuns struct {
	url                        string
	failed, owing, plain, kept string
}

func newCompRuns(t *testing.T) *compRuns {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: filepath.Join(t.TempDir(), "skein.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ids := world.NewIDSource(time.Now, nil)
	add := func(runID string, evs ...world.EventInput) {
		t.Helper()
		for _, ev := range evs {
			if _, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
				t.Fatalf("append %s: %v", ev.Type(), err)
			}
		}
	}
	in := func(corr string, d world.EventData) world.EventInput {
		return world.EventInput{CorrelationID: corr, Data: d}
	}
	start := func() string {
		id := ids.New(world.PrefixRun)
		add(id, in("", &world.RunCreated{WorkflowName: "order"}), in("", &world.RunStarted{}))
		return id
	}
	done := func(runID, name, comp string) string {
		id := ids.New(world.PrefixStep)
		add(runID, in(id, &world.StepCreated{StepName: name, Compensation: comp}), in(id, &world.StepStarted{Attempt: 1}),
			in(id, &world.StepCompleted{Result: []byte(`1`)}))
		return id
	}
	r := &compRuns{failed: start()}
	charge, reserve := done(r.failed, "charge", "refund"), done(r.failed, "reserve", "release")
	ship := ids.New(world.PrefixStep)
	add(r.failed, in(ship, &world.StepCreated{StepName: "ship"}), in(ship, &world.StepStarted{Attempt: 1}),
		in(ship, &world.StepFailed{Error: &world.ErrorData{Message: "no truck"}}),
		in("", &world.RunFailed{ErrorCode: world.CodeUserError, Error: &world.ErrorData{Message: "no truck"}, Compensate: true}),
		in(reserve, &world.CompStarted{}), in(reserve, &world.CompFailed{Error: &world.ErrorData{Message: "warehouse <gone>"}}),
		in(charge, &world.CompStarted{}), in(charge, &world.CompRetryScheduled{Error: &world.ErrorData{Message: "bank down"}}),
		in(charge, &world.CompStarted{}), in(charge, &world.CompSucceeded{}),
		in("", &world.RunDeactivated{}))
	r.owing = start()
	done(r.owing, "charge", "refund")
	add(r.owing, in("", &world.RunCancelled{Reason: "customer called", Compensate: true}))
	r.plain = start()
	add(r.plain, in("", &world.RunCompleted{Output: []byte(`1`)}))
	r.kept = start()
	done(r.kept, "charge", "refund")
	add(r.kept, in("", &world.RunCompleted{Output: []byte(`1`)}))

	c, err := client.New(client.Config{World: w, Registry: workflow.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webui.New(webui.Config{Client: c, ReadOnlyReason: "read-only"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// TestCompensationPages: the runs list marks a run whose compensation
// failed and one still compensating (the status filter unchanged); a run
// page shows the run's compensation counts, each step's compensation
// (status badge, attempts, error), the compensations' timeline rows and
// the comp_* events with their data.
func TestCompensationPages(t *testing.T) {
	t.Parallel()
	r := newCompRuns(t)
	row := func(id, cells string) string {
		return `href="/runs/` + id + `">` + id + `</a></td>\s*<td>order</td>\s*<td class="mono">-</td>\s*<td>` + cells + `</td>`
	}
	for _, tc := range []struct {
		name, path string
		want, not  []string // regular expressions
	}{
		{"list", "/", []string{
			row(r.failed, `<span class="status st-bad">failed</span> <span class="status comp-mark st-bad">compensation failed</span>`),
			row(r.owing, `<span class="status st-dim">cancelled</span> <span class="status comp-mark st-busy">compensating</span>`),
			row(r.plain, `<span class="status st-ok">completed</span>`),
			row(r.kept, `<span class="status st-ok">completed</span>`),
		}, nil},
		{"list by status", "/?status=failed", []string{r.failed, "compensation failed"}, []string{r.owing, r.plain}},
		{"failed run", "/runs/" + r.failed, []string{
			`<dt>Compensations</dt><dd id="run-compensations" class="st-bad">1 succeeded, 1 failed \(asked for by the run&#39;s failure\)</dd>`,
			`<b>charge</b> <span class="st-ok">compensated</span> · attempt 1 · undo <b>refund</b> <span class="status comp-status st-ok">compensated</span>`,
			`<b>reserve</b> <span class="st-bad">compensation_failed</span>`,
			`(?s)Compensation <span class="mono">refund</span>.*?attempt 2</p>.*?<td class="st-bad">failed</td><td class="error">bank down</td>.*?<td class="st-ok">completed</td>`,
			`(?s)Compensation <span class="mono">release</span>.*?<p class="error">warehouse &lt;gone&gt;</p>`,
			`<tr class="trow comp">\s*<td class="name">undo reserve: release</td><td>1</td><td><span class="st-bad">failed</span>`,
			`<tr class="trow comp">\s*<td class="name">undo charge: refund</td><td>2</td><td><span class="st-ok">completed</span>`,
			`<td>comp_retry_scheduled</td>`, `<td>comp_succeeded</td>`,
			`(?s)<td>comp_failed</td>.*?&#34;message&#34;: &#34;warehouse &lt;gone&gt;&#34;`,
			`(?s)<td>comp_started</td>.*?&#34;compensation&#34;: &#34;refund&#34;,.*?&#34;attempt&#34;: 2`,
		}, []string{`undo ship`, `comp-note`}},
		{"owing run", "/runs/" + r.owing, []string{
			`<dd id="run-compensations">1 owed \(asked for by the cancellation\)</dd>`,
			`undo <b>refund</b> <span class="status comp-status st-busy">not started</span>`,
			`id="comp-note">The run has ended, and its compensations are still running`,
			`id="live-note" data-events="/events\?after=`, // the feed goes on through the run's rest
		}, nil},
		{"plain run", "/runs/" + r.plain, nil, []string{`run-compensations`, `comp-`}},
		{"kept run", "/runs/" + r.kept, []string{`undo <b>refund</b> <span class="status comp-status st-dim">not run</span>`},
			[]string{`run-compensations`, `comp-note`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := http.Get(r.url + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body := string(b)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d\n%s", tc.path, resp.StatusCode, body)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(body) {
					t.Errorf("page lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("page has %q", n)
				}
			}
			if t.Failed() {
				t.Log(body)
			}
		})
	}
}
