package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestSafeStrings: names and tokens print as they are when printable and
// Go-quoted otherwise; free text keeps its printable characters and shows
// the others as escapes. Neither lets a control character through.
func TestSafeStrings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, name, text string
	}{
		{"fulfil-order", "fulfil-order", "fulfil-order"},
		{"orders ✓ été", "orders ✓ été", "orders ✓ été"},
		{"new\nline", `"new\nline"`, `new\nline`},
		{"tab\there", `"tab\there"`, `tab\there`},
		{"esc\x1b[31mred", `"esc\x1b[31mred"`, `esc\x1b[31mred`},
		{"del\x7f", `"del\x7f"`, `del\x7f`},
		{"c1\u009b31m", `"c1\u009b31m"`, `c1\u009b31m`},
		{"bidi\u202eevil", `"bidi\u202eevil"`, `bidi\u202eevil`},
		{"bad\xffutf8", `"bad\xffutf8"`, `bad\xffutf8`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := safeName(tc.in); got != tc.name {
				t.Errorf("safeName(%q) = %s, want %s", tc.in, got, tc.name)
			}
			if got := safeText(tc.in); got != tc.text {
				t.Errorf("safeText(%q) = %s, want %s", tc.in, got, tc.text)
			}
		})
	}
}

// hostileStore writes, bypassing any worker, a failed run whose error and a
// running run whose step error, cancel reason and hook metadata hold
// control characters, and a webhook and a plain hook.
func hostileStore(t *testing.T) (db, failedID, waitingID string) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "skein.db")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	ctx := context.Background()
	ids := world.NewIDSource(time.Now, nil)
	appendAll := func(runID string, evs ...world.EventInput) {
		t.Helper()
		for _, ev := range evs {
			if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
				t.Fatalf("append %s: %v", ev.Type(), err)
			}
		}
	}
	failedID, waitingID = ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	appendAll(failedID,
		world.EventInput{Data: &world.RunCreated{WorkflowName: "hostile", Input: []byte(`"in\u001b[2J"`)}},
		world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{Data: &world.RunFailed{ErrorCode: world.CodeUserError, Error: &world.ErrorData{Message: "boom\x1b[31mred\nsecond line"}}})
	step, webhook := ids.New(world.PrefixStep), ids.New(world.PrefixHook)
	// The webhook got a request recorded with its token in the URL (as
	// earlier versions recorded them).
	request := `{"method":"POST","url":"https://hooks.example` + workflow.WebhookPath + `whsec-0123456789abcdefg?order=7"}`
	appendAll(waitingID,
		world.EventInput{Data: &world.RunCreated{WorkflowName: "hostile"}},
		world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "charge"}},
		world.EventInput{CorrelationID: step, Data: &world.StepStarted{Attempt: 1}},
		world.EventInput{CorrelationID: step, Data: &world.StepRetrying{Error: &world.ErrorData{Message: "503\x1b]0;pwned\x07"}}},
		world.EventInput{CorrelationID: webhook, Data: &world.HookCreated{Token: "whsec-0123456789abcdefg", IsWebhook: true}},
		world.EventInput{CorrelationID: webhook, Data: &world.HookReceived{Token: "whsec-0123456789abcdefg", Payload: []byte(request)}},
		world.EventInput{CorrelationID: ids.New(world.PrefixHook), Data: &world.HookCreated{Token: "approve/42", Metadata: []byte(`{"note":"\u001b[31m"}`)}})
	return db, failedID, waitingID
}

// TestCLIEscapesUserText: no control character of user data reaches the
// terminal through runs list, runs show or hooks list, and errors stay
// readable; -json output stays exact.
func TestCLIEscapesUserText(t *testing.T) {
	t.Parallel()
	db, failedID, waitingID := hostileStore(t)
	noControl := func(t *testing.T, r result) {
		t.Helper()
		for _, c := range r.out + r.err {
			if c < 0x20 && c != '\n' || c == 0x7f {
				t.Fatalf("output holds control character %U:\n%q", c, r.out+r.err)
			}
		}
	}
	r := cli("-db", db, "runs", "show", failedID, "-no-color")
	r.expect(t, 0, `USER_ERROR: boom\x1b[31mred\nsecond line`, `"in\u001b[2J"`)
	noControl(t, r)
	r = cli("-db", db, "runs", "show", waitingID, "-no-color")
	r.expect(t, 0, `503\x1b]0;pwned\a`)
	noControl(t, r)
	r = cli("-db", db, "hooks", "list")
	r.expect(t, 0, "approve/42", `{"note":"\u001b[31m"}`)
	noControl(t, r)
	r = cli("-db", db, "runs", "list", "-json")
	r.expect(t, 0, `boom\u001b[31mred\nsecond line`) // JSON's own escapes
}

// TestWebhookTokensRedacted: runs show and hooks list show a webhook's
// token redacted unless -show-tokens; a plain hook's token stays visible
// (hooks resume takes it).
func TestWebhookTokensRedacted(t *testing.T) {
	t.Parallel()
	db, _, waitingID := hostileStore(t)
	const token = "whsec-0123456789abcdefg"
	redacted := redact.Token(token)
	for _, tc := range []struct {
		name   string
		args   []string
		reveal bool
	}{
		{"runs show", []string{"runs", "show", waitingID, "-no-color"}, false},
		{"hooks list", []string{"hooks", "list"}, false},
		{"hooks list -json", []string{"hooks", "list", "-json"}, false},
		{"runs show -show-tokens", []string{"runs", "show", waitingID, "-no-color", "-show-tokens"}, true},
		{"hooks list -show-tokens", []string{"hooks", "list", "-show-tokens"}, true},
		{"runs events", []string{"runs", "events", waitingID}, false},
		{"runs events -show-tokens", []string{"runs", "events", "-show-tokens", waitingID}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := cli(append([]string{"-db", db}, tc.args...)...)
			r.expect(t, 0, "approve/42")
			if tc.reveal != strings.Contains(r.out, token) || tc.reveal == strings.Contains(r.out, redacted) {
				t.Errorf("reveal %v: output shows the token %v, its digest %v:\n%s", tc.reveal, strings.Contains(r.out, token), strings.Contains(r.out, redacted), r.out)
			}
		})
	}
}

// TestTimelineLostExecutor: an attempt taken over after its executor was
// lost is drawn as lost, and the TRY column counts it apart.
func TestTimelineLostExecutor(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	step := "step_01J9Z3K7QH5V2M8X4N6P0R1S2T"
	events := []world.Event{
		{CorrelationID: step, CreatedAt: at(0), Data: &world.StepCreated{StepName: "charge"}},
		{CorrelationID: step, CreatedAt: at(0), Data: &world.StepStarted{Attempt: 1}},
		{CorrelationID: step, CreatedAt: at(500), Data: &world.StepStarted{Attempt: 2, Interrupted: 1}},
		{CorrelationID: step, CreatedAt: at(1000), Data: &world.StepCompleted{}},
	}
	run := &world.Run{RunID: "wrun_x", Status: world.RunStatusCompleted, CreatedAt: start, CompletedAt: at(1000)}
	var out bytes.Buffer
	drawTimeline(&out, run, events, at(1000), timelineOptions{width: 10})
	for _, want := range []string{"charge  1 (+1 lost)  completed  ╳╳╳╳╳█████", "╳ executor lost"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunsEventsRedactsSecret: runs events leaves out a run's secret
// unless -show-tokens.
func TestRunsEventsRedactsSecret(t *testing.T) {
	t.Parallel()
	f := prepare(t)
	r := cli("-db", f.db, "runs", "events", f.doneID)
	r.expect(t, 0, `"eventType":"run_created"`)
	if strings.Contains(r.out, `"secret":`) {
		t.Errorf("secret shown:\n%s", r.out)
	}
	shown := cli("-db", f.db, "runs", "events", "-show-tokens", f.doneID)
	shown.expect(t, 0, `"secret":"`)
	// The help says what the output is: no secret field, not a "redacted" one.
	help := cli("runs", "events", "-help")
	help.expect(t, 0, `run_created has no "secret" field`, "-show-tokens", "ErrNoTokens")
	if strings.Contains(help.out, "keeps its shape") {
		t.Errorf("runs events -help claims the JSON keeps its shape:\n%s", help.out)
	}
}
