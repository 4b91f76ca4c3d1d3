package otlpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/skeinflow/skein/internal/envvars"
)

// Config configures an Exporter.
type Config struct {
	// Endpoint is the URL spans are POSTed to (default
	// http://localhost:4318/v1/traces).
	Endpoint string
	// Headers are added to every request (an API key, say).
	Headers map[string]string
	// Timeout bounds one export (default 10s).
	Timeout time.Duration
	// Client sends the requests (default: a client of its own).
	Client *http.Client
}

// Exporter exports spans as OTLP/HTTP JSON; it implements
// sdktrace.SpanExporter.
type Exporter struct {
	cfg Config
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter for cfg.
func New(cfg Config) (*Exporter, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = "http://localhost:4318/v1/traces"
	}
	if u, err := url.Parse(cfg.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlpjson: endpoint %q: want an http or https URL", cfg.Endpoint)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Exporter{cfg: cfg}, nil
}

// FromEnv returns the configuration the standard variables describe (read
// by envvars.Read): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces),
// OTEL_EXPORTER_OTLP_[TRACES_]HEADERS (k=v pairs separated by commas, values
// URL-encoded) and OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (milliseconds).
func FromEnv(env envvars.OTel) (Config, error) {
	// either returns the traces-specific value when set, else the general
	// one, with the name of the variable it came from.
	either := func(specific, general, specificName, generalName string) (string, string) {
		if specific != "" {
			return specificName, specific
		}
		return generalName, general
	}
	var cfg Config
	if env.TracesEndpoint != "" {
		cfg.Endpoint = env.TracesEndpoint
	} else if env.Endpoint != "" {
		cfg.Endpoint = strings.TrimSuffix(env.Endpoint, "/") + "/v1/traces"
	}
	if name, v := either(env.TracesHeaders, env.Headers, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); v != "" {
		cfg.Headers = map[string]string{}
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			dec, err := url.QueryUnescape(strings.TrimSpace(val))
			if !ok || strings.TrimSpace(k) == "" || err != nil {
				return cfg, fmt.Errorf("otlpjson: %s: %q is not key=value", name, pair)
			}
			cfg.Headers[strings.TrimSpace(k)] = dec
		}
	}
	if name, v := either(env.TracesTimeout, env.Timeout, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("otlpjson: %s=%q: want milliseconds", name, v)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	return cfg, nil
}

// ExportSpans sends spans in one request.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(encode(spans))
	if err != nil {
		return fmt.Errorf("otlpjson: encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlpjson: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("otlpjson: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlpjson: export %d spans: %s: %s", len(spans), resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown does nothing: the exporter holds nothing open between exports.
func (e *Exporter) Shutdown(ctx context.Context) error { return ctx.Err() }
