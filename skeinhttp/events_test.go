package skeinhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeinhttp"
	"github.com/skeinflow/skein/world"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ids = world.NewIDSource(nil, nil)

// fixture is a local world, a client and the handler behind a test server.
type fixture struct {
	t   *testing.T
	w   *localworld.World
	srv *httptest.Server
}

func newFixture(t *testing.T, cfg skeinhttp.EventsConfig, opts ...knobs.Option) *fixture {
	t.Helper()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = c
	h, err := skeinhttp.NewEvents(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = w.Close()
	})
	return &fixture{t: t, w: w, srv: srv}
}

func (f *fixture) append(run string, evs ...world.EventInput) {
	f.t.Helper()
	if _, err := f.w.Append(context.Background(), &world.AppendParams{RunID: run, Events: evs}); err != nil {
		f.t.Fatal(err)
	}
}

// run creates and starts a run.
func (f *fixture) run() string {
	f.t.Helper()
	id := ids.New(world.PrefixRun)
	f.append(id, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}})
	f.append(id, world.EventInput{Data: &world.RunStarted{}})
	return id
}

func (f *fixture) step(run string) {
	f.t.Helper()
	id := ids.New(world.PrefixStep)
	f.append(run, world.EventInput{CorrelationID: id, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`"line\none"`)}},
		world.EventInput{CorrelationID: id, Data: &world.StepStarted{}})
	f.append(run, world.EventInput{CorrelationID: id, Data: &world.StepCompleted{Result: json.RawMessage(`1`)}})
}

// open GETs the stream with query q and the Last-Event-ID lastID.
func (f *fixture) open(q url.Values, lastID string) *http.Response {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"?"+q.Encode(), nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// messages reads the stream's messages as they come.
func messages(t *testing.T, resp *http.Response) func() skeinhttp.Message {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan skeinhttp.Message)
	go func() {
		defer close(ch)
		for m, err := range skeinhttp.Read(resp.Body) {
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	t.Cleanup(func() {
		resp.Body.Close()
		for range ch {
		}
	})
	return func() skeinhttp.Message {
		t.Helper()
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message within 10s")
		}
		return skeinhttp.Message{}
	}
}

func event(t *testing.T, m skeinhttp.Message) world.Event {
	t.Helper()
	var e world.Event
	if m.Event != "" {
		t.Fatalf("message of type %q (%s), want an event", m.Event, m.Data)
	}
	if err := json.Unmarshal([]byte(m.Data), &e); err != nil {
		t.Fatalf("event data %q: %v", m.Data, err)
	}
	if m.ID != world.RunCursor(e.RunID, e.Seq) && !strings.HasPrefix(m.ID, "ey") {
		t.Fatalf("message id %q is not a cursor", m.ID)
	}
	return e
}

func TestEventsSnapshotThenLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{})
	run := f.run()
	f.step(run)
	next := messages(t, f.open(url.Values{"run": {run}, "snapshot": {"1"}}, ""))
	m := next()
	var st world.RunState
	if m.Event != "snapshot" || json.Unmarshal([]byte(m.Data), &st) != nil || st.Run.LastSeq != 5 || len(st.Steps) != 1 {
		t.Fatalf("first message %+v, want a snapshot of the run at seq 5 with one step", m)
	}
	if m.ID != world.RunCursor(run, 5) {
		t.Fatalf("snapshot id %q, want the cursor of seq 5", m.ID)
	}
	f.step(run)
	f.append(run, world.EventInput{Data: &world.RunCompleted{}})
	for seq := int64(6); seq <= 9; seq++ {
		if e := event(t, next()); e.Seq != seq || e.RunID != run {
			t.Fatalf("got event %d of %s, want %d", e.Seq, e.RunID, seq)
		}
	}
	if m := next(); m.Event != "end" {
		t.Fatalf("after run_completed: %+v, want an end message", m)
	}
}

func TestEventsReconnectWithLastEventID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{})
	run := f.run()
	resp := f.open(url.Values{"run": {run}, "types": {"run_started,step_completed"}}, "")
	next := messages(t, resp)
	first := next()
	if e := event(t, first); e.Type() != world.EventRunStarted {
		t.Fatalf("first event %s, want run_started", e.Type())
	}
	resp.Body.Close() // the client goes away
	f.step(run)
	f.step(run)
	again := messages(t, f.open(url.Values{"run": {run}, "types": {"run_started", "step_completed"}}, first.ID))
	for _, seq := range []int64{5, 8} {
		if e := event(t, again()); e.Seq != seq || e.Type() != world.EventStepCompleted {
			t.Fatalf("got %s %d, want step_completed %d", e.Type(), e.Seq, seq)
		}
	}
	f.append(run, world.EventInput{Data: &world.RunCancelled{Reason: "r"}})
	if m := again(); m.Event != "end" {
		t.Fatalf("got %+v, want end", m)
	}
	// Reconnecting after the end: 204, which stops EventSource.
	after := f.open(url.Values{"run": {run}}, world.RunCursor(run, 9))
	if after.StatusCode != http.StatusNoContent {
		t.Fatalf("reconnect after the end: status %d, want 204", after.StatusCode)
	}
}

func TestEventsAllRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{})
	f.run() // before the stream: not in it
	next := messages(t, f.open(url.Values{"types": {"run_created"}}, ""))
	a := f.run()
	b := f.run()
	for _, want := range []string{a, b} {
		if e := event(t, next()); e.RunID != want || e.Type() != world.EventRunCreated {
			t.Fatalf("got %s of %s, want run_created of %s", e.Type(), e.RunID, want)
		}
	}
}

func TestEventsBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, skeinhttp.EventsConfig{})
	run := f.run()
	for _, tc := range []struct {
		name   string
		method string
		query  url.Values
		status int
	}{
		{"unknown run", http.MethodGet, url.Values{"run": {ids.New(world.PrefixRun)}}, http.StatusNotFound},
		{"malformed run", http.MethodGet, url.Values{"run": {"run-1"}}, http.StatusBadRequest},
		{"unknown type", http.MethodGet, url.Values{"types": {"nope"}}, http.StatusBadRequest},
		{"bad cursor", http.MethodGet, url.Values{"run": {run}, "after": {"zz"}}, http.StatusBadRequest},
		{"bad snapshot", http.MethodGet, url.Values{"snapshot": {"yes please"}}, http.StatusBadRequest},
		{"POST", http.MethodPost, nil, http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, f.srv.URL+"?"+tc.query.Encode(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || strings.Count(strings.TrimSpace(string(body)), "\n") != 0 {
			t.Errorf("%s: status %d, body %q; want %d and one line", tc.name, resp.StatusCode, body, tc.status)
		}
	}
}
