//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// otlpSpan is what the test reads of an OTLP/JSON span.
type otlpSpan struct {
	TraceID    string `json:"traceId"`
	Name       string `json:"name"`
	Links      []any  `json:"links"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// collector is an OTLP/HTTP (JSON) trace receiver on 127.0.0.1.
type collector struct {
	mu    sync.Mutex
	spans []otlpSpan
	url   string
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err != nil || r.URL.Path != "/v1/traces" || json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c.url = "http://" + ln.Addr().String()
	return c
}

func (c *collector) all() []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans...)
}

func spanAttr(s otlpSpan, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.StringValue
		}
	}
	return ""
}

// TestTraceAcrossInvocations: a run started under a span continues its
// trace through the real bootstrap: the flow function, configured by the
// standard OTEL_* environment only, exports its spans over OTLP/HTTP, and
// the sessions (skein.run) of a run that sleeps, across the invocations its
// sleep takes, and the step attempts (skein.step) of another run, are all in
// the starter's trace; each invocation's own span (skein.invocation) is
// linked from them.
func TestTraceAcrossInvocations(t *testing.T) {
	t.Parallel()
	col := newCollector(t)
	s := newStack(t, stackOptions{Env: map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": col.url, "OTEL_SERVICE_NAME": "skein-trace-test",
	}})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, req := tp.Tracer("test").Start(context.Background(), "POST /orders")
	run, err := demo.FulfilOrder.Start(ctx, s.client, demo.Order{ID: "7", Items: []string{"book", "pen"}, Total: 12})
	if err != nil {
		t.Fatal(err)
	}
	// A sleep longer than an invocation lingers: the run goes on in another.
	sleeper, err := demo.Sleeper.Start(ctx, s.client, 1500*time.Millisecond)
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{run.ID(), sleeper.ID()} {
		if info := s.wait(id, time.Minute); info.Status != world.RunStatusCompleted {
			t.Fatalf("run %s: %s", id, info.Status)
		}
	}
	s.drain(time.Minute)
	s.noFailures()
	want := req.SpanContext().TraceID()

	var sessions, steps, invocations int
	traces := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		sessions, steps, invocations = 0, 0, 0
		spans := col.all()
		for _, sp := range spans {
			tid := sp.TraceID
			switch {
			case sp.Name == "skein.invocation":
				invocations++
			case spanAttr(sp, "skein.run.id") == sleeper.ID() && sp.Name == "skein.run":
				sessions++
				if tid != want.String() || len(sp.Links) == 0 {
					t.Fatalf("session span in trace %s with %d links; want trace %s, linked to its invocation", tid, len(sp.Links), want)
				}
			case spanAttr(sp, "skein.run.id") == run.ID() && strings.HasPrefix(sp.Name, "skein.step "):
				steps++
				traces[tid] = true
			}
		}
		if (sessions >= 2 && steps >= 4 && invocations >= 3) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sessions < 2 || steps != 4 || invocations < 3 {
		t.Fatalf("exported %d session spans of the sleeper, %d step spans of the order and %d invocation spans; want the sleeper's sessions across 2 or more invocations and the order's 4 steps", sessions, steps, invocations)
	}
	if len(traces) != 1 || !traces[want.String()] {
		t.Errorf("the run's step spans are in traces %v; want only the request's %s", traces, want)
	}
	t.Logf("%d sessions, %d step attempts, %d invocations in one trace", sessions, steps, invocations)
}
