package skeinlambda

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/internal/otlpjson"
)

// tracerProviderFromEnv builds the tracer provider the standard OTEL_*
// variables ask for: nil (no tracing) unless OTEL_TRACES_EXPORTER is otlp or
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and never when OTEL_SDK_DISABLED is
// true or OTEL_TRACES_EXPORTER is none. Spans go over OTLP/HTTP with JSON
// bodies, which every OTLP/HTTP receiver accepts whatever
// OTEL_EXPORTER_OTLP_PROTOCOL says (gRPC is refused), through a batching
// processor that the flow handler flushes before each invocation returns.
// The endpoint, headers and timeout come from OTEL_EXPORTER_OTLP_*, the
// sampler from OTEL_TRACES_SAMPLER, the resource from OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES; the service name defaults to the function's.
func tracerProviderFromEnv(ctx context.Context, env envvars.Vars) (trace.TracerProvider, error) {
	o := env.OTel
	if strings.EqualFold(o.SDKDisabled, "true") {
		return nil, nil
	}
	switch exp := strings.ToLower(o.TracesExporter); exp {
	case "none":
		return nil, nil
	case "":
		if o.Endpoint == "" && o.TracesEndpoint == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("skeinlambda: OTEL_TRACES_EXPORTER=%q: want otlp or none (or give WithTracerProvider)", exp)
	}
	proto := o.TracesProtocol
	if proto == "" {
		proto = o.Protocol
	}
	if proto != "" && proto != "http/json" && proto != "http/protobuf" {
		return nil, fmt.Errorf("skeinlambda: OTLP protocol %q: only OTLP over HTTP is built in (or give WithTracerProvider)", proto)
	}
	expCfg, err := otlpjson.FromEnv(o)
	if err != nil {
		return nil, fmt.Errorf("skeinlambda: %w", err)
	}
	exp, err := otlpjson.New(expCfg)
	if err != nil {
		return nil, fmt.Errorf("skeinlambda: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("cloud.provider", "aws"), attribute.String("cloud.platform", "aws_lambda")}
	if fn := env.FunctionName; fn != "" {
		attrs = append(attrs, attribute.String("faas.name", fn))
		if o.ServiceName == "" {
			attrs = append(attrs, attribute.String("service.name", fn))
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("skeinlambda: OpenTelemetry resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
