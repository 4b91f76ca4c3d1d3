package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefuseVersion checks that an engine that does not run a run's
// version leaves its message for another executor: the run is not failed,
// held or started, even on a delivery far past MaxDeliveries; the message
// comes back as one new message (a repeated refusal sends no second one),
// delayed and counted in Refused; the log names the version; and an engine
// of that version then runs the run to its end.
func TestRefuseVersion(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	refusals := &countMetrics{}
	h := newHarness(t, nil, Config{
		AcceptVersion: func(v string) bool { return v == "v2" },
		// Delays a loaded machine does not outrun between the refusal and
		// the look at the queue.
		VersionRetryDelay: 2 * time.Second, VersionRetryLimit: 3 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Options: Options{Metrics: refusals},
	})
	h.reg.wf("greet", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	ctx := context.Background()
	id := h.ids.New(world.PrefixRun)
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "greet", Input: mustJSON("hi"), Version: "v1"}}}}); err != nil {
		t.Fatal(err)
	}
	msg := world.Message{RunID: id, RequestedAt: time.Now()}
	for range 2 {
		if err := h.eng.HandleDelivery(ctx, msg, 1000); err != nil {
			t.Fatalf("HandleDelivery of a run of another version: %v, want nil (left for another executor)", err)
		}
	}
	if n := refusals.get(MetricMessagesRefused); n != 2 {
		t.Fatalf("%s counted %d, want 2", MetricMessagesRefused, n)
	}
	if r, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id}); r.Status != world.RunStatusPending {
		t.Fatalf("run of another version: status %s, want pending (untouched)", r.Status)
	}
	if !strings.Contains(logs.String(), "version=v1") || !strings.Contains(logs.String(), "compatible executor") {
		t.Fatalf("log %q does not name the run's version", logs.String())
	}
	if ds, _ := h.lw.Receive(ctx, &world.ReceiveParams{Max: 10, Visibility: time.Minute}); len(ds) != 0 {
		t.Fatalf("the refused message came back at once (%d messages), want it delayed", len(ds))
	}
	ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: 10 * time.Second, Visibility: time.Minute})
	if err != nil || len(ds) != 1 {
		t.Fatalf("after the delay: %d messages (%v), want the one sent back", len(ds), err)
	}
	back, err := world.DecodeMessage(ds[0].Body)
	if err != nil || back.Refused != 1 || back.RunID != id || ds[0].Attempt != 1 {
		t.Fatalf("message sent back: %+v attempt %d (%v), want run %s refused once, a first delivery", back, ds[0].Attempt, err, id)
	}
	v1, err := New(Config{World: h.w, Registry: h.reg, AcceptVersion: func(v string) bool { return v == "v1" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v1.Close)
	if err := v1.HandleDelivery(ctx, back, ds[0].Attempt); err != nil {
		t.Fatalf("an engine of the run's version: %v", err)
	}
	if r := h.wait(id); r.Status != world.RunStatusCompleted || string(r.Output) != `"hi"` {
		t.Fatalf("run: %s %s, want completed with \"hi\"", r.Status, r.Output)
	}
	// A finished run's message needs no workflow code: not refused.
	n := strings.Count(logs.String(), "compatible executor")
	if err := h.eng.HandleDelivery(ctx, world.Message{RunID: id}, 1); err != nil {
		t.Fatal(err)
	}
	if strings.Count(logs.String(), "compatible executor") != n {
		t.Fatalf("a finished run's message was refused: %s", logs.String())
	}
}

func TestVersionDelay(t *testing.T) {
	t.Parallel()
	e := &gate{port: &port{cfg: Config{VersionRetryDelay: time.Second, VersionRetryLimit: 5 * time.Second}}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 40: 5 * time.Second} {
		if got := e.versionDelay(n); got != want {
			t.Errorf("versionDelay(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestVersionConfigValidation(t *testing.T) {
	t.Parallel()
	base := func() Config { return Config{World: nilWorld{}, Registry: newRegistry()} }
	for _, c := range []struct {
		name string
		cfg  func(Config) Config
		want string
	}{
		{"negative delay", func(c Config) Config { c.VersionRetryDelay = -time.Second; return c }, "VersionRetryDelay is negative"},
		{"limit under delay", func(c Config) Config {
			c.VersionRetryDelay, c.VersionRetryLimit = time.Minute, time.Second
			return c
		}, "VersionRetryLimit (1s) is less than VersionRetryDelay (1m0s)"},
	} {
		_, err := New(c.cfg(base()))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	e, err := New(base())
	if err != nil {
		t.Fatal(err)
	}
	if c := e.Config(); c.VersionRetryDelay != DefaultVersionRetryDelay || c.VersionRetryLimit != DefaultVersionRetryLimit || c.AcceptVersion != nil {
		t.Errorf("defaults: delay %s limit %s", c.VersionRetryDelay, c.VersionRetryLimit)
	}
}

// nilWorld is a World for configuration tests: never called.
type nilWorld struct{ world.World }

// countMetrics counts what a Metrics sink is told.
type countMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countMetrics) Count(name string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[name] += n
}

func (m *countMetrics) Duration(string, time.Duration) {}

func (m *countMetrics) get(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[name]
}
