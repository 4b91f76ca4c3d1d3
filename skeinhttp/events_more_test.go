package skeinhttp_test

import (
	"bufio"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/skeinhttp"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// lines reads the raw lines of a stream until it has n.
func rawLines(t *testing.T, f *fixture, q url.Values, n int) []string {
	t.Helper()
	resp := f.open(q, "")
	sc := bufio.NewScanner(resp.Body)
	var out []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(out) < n && sc.Scan() {
			out = append(out, sc.Text())
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		resp.Body.Close()
		<-done
		t.Fatalf("%d lines within 10s, want %d: %q", len(out), n, out)
	}
	resp.Body.Close()
	return out
}

func TestEventsHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{}, knobs.WithHeartbeat(20*time.Millisecond, 1500*time.Millisecond))
	lines := rawLines(t, f, url.Values{}, 7)
	want := []string{"retry: 1500", ": ok", "", ": heartbeat", "", ": heartbeat", ""}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("an idle stream: %q, want %q", lines, want)
	}
}

// TestEventsDataLines checks that every line of the stream is a field, a
// comment or empty: a payload with newlines, control characters and a
// script tag stays on its data line.
func TestEventsDataLines(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{})
	run := ids.New(world.PrefixRun)
	f.append(run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage("{\n \"x\": \"a\\nb\\r\\u0000<script>\"\n}")}})
	lines := rawLines(t, f, url.Values{"run": {run}}, 5)
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, ": ") && !strings.HasPrefix(l, "id: ") && !strings.HasPrefix(l, "data: ") {
			t.Fatalf("line %q is neither a field nor a comment (all: %q)", l, lines)
		}
	}
	var e world.Event
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[3], "data: ")), &e); err != nil {
		t.Fatalf("data line %q: %v", lines[3], err)
	}
	if in := string(e.Data.(*world.RunCreated).Input); !strings.Contains(in, `a\nb\r\u0000\u003cscript\u003e`) {
		t.Fatalf("input %s: want the string escaped", in)
	}
}

func TestEventsRedactsWebhookTokens(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		f := newFixture(t, skeinhttp.EventsConfig{ShowTokens: show})
		run := f.run()
		web, plain := ids.New(world.PrefixHook), ids.New(world.PrefixHook)
		f.append(run, world.EventInput{CorrelationID: web, Data: &world.HookCreated{Token: "secret-web", IsWebhook: true}},
			world.EventInput{CorrelationID: plain, Data: &world.HookCreated{Token: "plain-tok"}})
		next := messages(t, f.open(url.Values{"run": {run}, "snapshot": {"1"}}, ""))
		snap := next().Data
		// A request recorded with the token in its URL (as earlier versions
		// recorded webhook requests).
		request := `{"method":"POST","url":"https://hooks.example` + workflow.WebhookPath + `secret-web?order=7"}`
		f.append(run, world.EventInput{CorrelationID: web, Data: &world.HookReceived{Token: "secret-web", Payload: json.RawMessage(request)}})
		created := f.eventData(t, run, 3, world.EventHookCreated)
		received := next().Data
		if !strings.Contains(received, "order=7") {
			t.Errorf("ShowTokens %v: the request is not shown: %s", show, received)
		}
		for _, data := range []string{snap, created, received} {
			if strings.Contains(data, "secret-web") == !show {
				t.Errorf("ShowTokens %v: %s", show, data)
			}
		}
		if !show && (!strings.Contains(snap, redact.Token("secret-web")) || !strings.Contains(snap, "plain-tok")) {
			t.Errorf("snapshot %s: want the webhook's token redacted, the plain hook's shown", snap)
		}
	}
}

// eventData reads event seq of run through a fresh stream.
func (f *fixture) eventData(t *testing.T, run string, seq int64, typ world.EventType) string {
	t.Helper()
	next := messages(t, f.open(url.Values{"run": {run}, "types": {string(typ)}}, ""))
	m := next()
	if e := event(t, m); e.Seq != seq {
		t.Fatalf("got event %d, want %d", e.Seq, seq)
	}
	return m.Data
}

func TestRead(t *testing.T) {
	t.Parallel()
	in := ": comment\nretry: 10\nid: c1\ndata: {\"a\":\ndata: 1}\n\nevent: end\ndata: {}\n\r\ndata: no id change\n\n"
	var got []skeinhttp.Message
	for m, err := range skeinhttp.Read(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	want := []skeinhttp.Message{{ID: "c1", Data: "{\"a\":\n1}"}, {Event: "end", ID: "c1", Data: "{}"}, {ID: "c1", Data: "no id change"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("message %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
