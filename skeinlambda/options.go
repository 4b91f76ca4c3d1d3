package skeinlambda

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/worker"
)

// An Option overrides part of what Start and New build from the
// environment. Options apply in order.
type Option func(*options)

type options struct {
	logger  *slog.Logger
	aws     *aws.Config
	getenv  func(string) string
	engine  []func(*worker.EngineOptions)
	handler []func(*handler.Config)
	world   []func(*dynamoworld.Config)
	tracer  trace.TracerProvider
}

// WithTracerProvider makes the flow handler's OpenTelemetry spans with tp
// instead of the provider the OTEL_* environment describes (see New). One
// with a ForceFlush(context.Context) error method is flushed before each
// invocation returns.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// WithLogger sends the handlers', the engine's and the World's logs to l
// instead of JSON lines on stdout at AWS_LAMBDA_LOG_LEVEL. The handlers add
// the Lambda request ID to every record, so give a plain handler (see
// handler.Config.Logger).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithAWSConfig uses cfg for the DynamoDB, SQS and S3 clients instead of
// loading the default configuration (config.LoadDefaultConfig) from the
// environment.
func WithAWSConfig(cfg aws.Config) Option {
	return func(o *options) { o.aws = &cfg }
}

// WithEngineOptions lets f change the engine's options after the
// environment has set its own (InlineConcurrency, StepLeaseTTL,
// RunLeaseTTL, MaxQueueDelay), for example the delays before a held run is
// replayed again. BudgetMargin is ignored: SKEIN_TIME_BUDGET_MARGIN sets it.
func WithEngineOptions(f func(*worker.EngineOptions)) Option {
	return func(o *options) { o.engine = append(o.engine, f) }
}

// WithHandlerConfig lets f change the handler's configuration last, once
// the World and the Registry are in it (margins, concurrency, the policy for
// malformed messages, RetryDelay, ...).
func WithHandlerConfig(f func(*handler.Config)) Option {
	return func(o *options) { o.handler = append(o.handler, f) }
}

// WithWorldConfig lets f change the World's configuration before the World
// is built (the clients and resource names are already set).
func WithWorldConfig(f func(*dynamoworld.Config)) Option {
	return func(o *options) { o.world = append(o.world, f) }
}

// WithGetenv reads the function's settings through getenv instead of
// os.Getenv (the SDK configuration still comes from the process
// environment unless WithAWSConfig gives one).
func WithGetenv(getenv func(string) string) Option {
	return func(o *options) { o.getenv = getenv }
}
