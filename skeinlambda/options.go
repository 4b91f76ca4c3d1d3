package skeinlambda

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/handler"
)

// An Option overrides part of what Start and New build from the
// environment. Options apply in order.
type Option func(*options)

type options struct {
	aws     *aws.Config
	getenv  func(string) string
	handler []func(*handler.Config)
	world   []func(*dynamoworld.Config)
}

// WithAWSConfig uses cfg for the DynamoDB, SQS and S3 clients instead of
// loading the default configuration (config.LoadDefaultConfig) from the
// environment.
func WithAWSConfig(cfg aws.Config) Option {
	return func(o *options) { o.aws = &cfg }
}

// WithHandlerConfig lets f change the handler's configuration once the
// environment has been read and before the World is built. The Logger it
// leaves in cfg.Worker receives the handlers', the engine's and the
// World's logs (and, from Start, why the handler could not be built;
// give a plain handler, see handler.Config.Worker). cfg.Worker.Engine
// tunes the engine: its TracerProvider, when set, replaces the one the
// OTEL_* environment describes (see New); the rest, for example the delays
// before a held run is replayed again, after the environment's. The other
// fields tune the handler (margins, concurrency, the policy for malformed
// messages, ...). cfg.Worker.Registry is New's reg; cfg.Worker.World is
// nil until the World is built (WithWorldConfig changes the World's
// configuration): New sets it after f, and Worker.Inbox and Queue unless f
// set them.
func WithHandlerConfig(f func(cfg *handler.Config)) Option {
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
