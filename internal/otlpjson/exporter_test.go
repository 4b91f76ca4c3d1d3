package otlpjson

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/internal/envvars"
)

// receiver is an OTLP/HTTP endpoint that keeps the bodies it receives.
type receiver struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	status  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &m) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, m)
	r.headers = append(r.headers, req.Header.Clone())
	if r.status != 0 {
		http.Error(w, "try later", r.status)
		return
	}
	_, _ = w.Write([]byte("{}"))
}

// path walks a decoded JSON document: keys for objects, ints for arrays.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func TestExportSpans(t *testing.T) {
	t.Parallel()
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	exp, err := New(Config{Endpoint: srv.URL + "/v1/traces", Headers: map[string]string{"x-api-key": "k1"}})
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "orders"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, parent := tp.Tracer("scope-a").Start(context.Background(), "parent")
	linked := trace.SpanContextFromContext(ctx)
	_, child := tp.Tracer("scope-a").Start(ctx, "child", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(trace.Link{SpanContext: linked}),
		trace.WithAttributes(attribute.String("s", "x"), attribute.Int("n", 42), attribute.Bool("b", true),
			attribute.Float64("f", 1.5), attribute.StringSlice("ss", []string{"a", "b"})))
	child.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "card declined")
	child.End()
	parent.End()

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bodies) != 2 || rcv.headers[0].Get("x-api-key") != "k1" {
		t.Fatalf("%d exports, headers %v", len(rcv.bodies), rcv.headers)
	}
	body := rcv.bodies[0]
	if got := path(body, "resourceSpans", 0, "resource", "attributes", 0, "value", "stringValue"); got != "orders" {
		t.Errorf("resource = %v", path(body, "resourceSpans", 0, "resource"))
	}
	if got := path(body, "resourceSpans", 0, "scopeSpans", 0, "scope", "name"); got != "scope-a" {
		t.Errorf("scope = %v", got)
	}
	sp := path(body, "resourceSpans", 0, "scopeSpans", 0, "spans", 0)
	want := map[string]any{
		"name": "child", "kind": float64(5), "traceId": linked.TraceID().String(), "parentSpanId": linked.SpanID().String(),
	}
	for k, v := range want {
		if got := path(sp, k); got != v {
			t.Errorf("span %s = %v, want %v", k, got, v)
		}
	}
	if id, _ := path(sp, "spanId").(string); len(id) != 16 || strings.ToLower(id) != id {
		t.Errorf("span ID %q: want 16 lowercase hex digits", id)
	}
	if start, _ := path(sp, "startTimeUnixNano").(string); len(start) < 19 {
		t.Errorf("start time %v: want nanoseconds as a string", path(sp, "startTimeUnixNano"))
	}
	attrs := map[string]any{}
	for _, a := range path(sp, "attributes").([]any) {
		attrs[path(a, "key").(string)] = path(a, "value")
	}
	for k, v := range map[string]any{"s": "x", "n": "42", "b": true, "f": 1.5} {
		var got any
		for _, field := range []string{"stringValue", "intValue", "boolValue", "doubleValue"} {
			if x := path(attrs[k], field); x != nil {
				got = x
			}
		}
		if got != v {
			t.Errorf("attribute %s = %v, want %v", k, attrs[k], v)
		}
	}
	if got := path(attrs["ss"], "arrayValue", "values", 1, "stringValue"); got != "b" {
		t.Errorf("string slice = %v", attrs["ss"])
	}
	if path(sp, "status", "code") != float64(2) || path(sp, "status", "message") != "card declined" {
		t.Errorf("status = %v; want code 2 (error) with the message", path(sp, "status"))
	}
	if path(sp, "links", 0, "spanId") != linked.SpanID().String() || path(sp, "events", 0, "name") != "retry" {
		t.Errorf("links %v events %v", path(sp, "links"), path(sp, "events"))
	}
}

func TestExportFailure(t *testing.T) {
	t.Parallel()
	rcv := &receiver{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	exp, err := New(Config{Endpoint: srv.URL + "/v1/traces", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	_, s := tp.Tracer("x").Start(context.Background(), "op")
	s.End()
	err = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{s.(sdktrace.ReadOnlySpan)})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v; want the receiver's 503", err)
	}
	if _, err := New(Config{Endpoint: "localhost:4318"}); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
	if err := exp.Shutdown(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Error(err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{"nothing", nil, Config{}, ""},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, Config{Endpoint: "http://collector:4318/v1/traces"}, ""},
		{"traces endpoint wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"}, Config{Endpoint: "https://b/custom"}, ""},
		{"headers and timeout", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			Config{Headers: map[string]string{"api-key": "a b", "x": "1"}, Timeout: 2500 * time.Millisecond}, ""},
		{"bad header", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "novalue"}, Config{}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, Config{}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := FromEnv(envvars.Read(func(k string) string { return tc.env[k] }).OTel)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Endpoint != tc.want.Endpoint || got.Timeout != tc.want.Timeout || len(got.Headers) != len(tc.want.Headers) {
				t.Fatalf("FromEnv = %+v, %v; want %+v", got, err, tc.want)
			}
			for k, v := range tc.want.Headers {
				if got.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, got.Headers[k], v)
				}
			}
		})
	}
}
