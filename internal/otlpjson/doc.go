// Package otlpjson is an OpenTelemetry span exporter speaking OTLP over
// HTTP with JSON bodies (the protocol "http/json"), which every OTLP
// receiver on port 4318 accepts: the OpenTelemetry Collector, the AWS
// Distro for OpenTelemetry Lambda layer, Jaeger and the hosted backends.
// It exists so that the Lambda function can export traces without linking
// the protobuf and gRPC runtimes the official exporters bring (several
// megabytes of binary and their init time, paid by every cold start).
//
// FromEnv reads the standard OTEL_EXPORTER_OTLP_* variables.
package otlpjson
