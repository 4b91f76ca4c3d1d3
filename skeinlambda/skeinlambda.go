package skeinlambda

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/encrypt/kmskeys"
	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/workflow"
)

// initTimeout bounds what New does before the first invocation (loading the
// AWS configuration, building the World); Lambda's init phase itself lasts
// at most 10 s.
const initTimeout = 5 * time.Second

// Start builds the handler the environment asks for (New) and serves it
// with lambda.Start; it does not return. If the handler cannot be built, it
// logs why (to the Logger a WithHandlerConfig option set, else as a JSON line on stderr) and exits
// with status 1: Lambda reports an init error, and the next invocation tries
// a fresh cold start.
func Start(reg *workflow.Registry, opts ...Option) {
	h, logger, err := build(context.Background(), reg, opts)
	if err != nil {
		if logger == nil {
			logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
		}
		logger.Error("skein: init failed", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

// New reads the environment, builds the World on the stack's resources and
// returns the handler SKEIN_HANDLER names, ready for lambda.Start: a
// handler.SQSHandler for "flow", a handler.WebhookHandler for "webhook", a
// handler.APIHandler for "api". reg holds the workflows and steps the
// functions run. Tracing follows the standard OpenTelemetry environment:
// with OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER=otlp) the flow
// function sends its spans over OTLP/HTTP, flushed before each invocation
// returns; without, it traces nothing (WithHandlerConfig may set a
// provider of your own, as Worker.Engine.TracerProvider).
func New(ctx context.Context, reg *workflow.Registry, opts ...Option) (any, error) {
	h, _, err := build(ctx, reg, opts)
	if err != nil {
		return nil, err // not a typed nil handler inside a non-nil any
	}
	return h, nil
}

// build is New; it also returns the logger the options chose (nil when
// they chose none, or before they were applied), for Start's report.
func build(ctx context.Context, reg *workflow.Registry, opts []Option) (any, *slog.Logger, error) {
	if reg == nil {
		return nil, nil, errors.New("skeinlambda: no Registry: one is required")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	// The environment is read here, once: handler.ConfigFromEnv parses the
	// functions' settings, env.Knobs the engine's own (SKEIN_MAX_QUEUE_DELAY,
	// SKEIN_VERSION_RETRY_*), the rest (endpoints, OTEL_*) is New's.
	env := envvars.Read(getenv)
	cfg, err := handler.ConfigFromEnv(getenv)
	kn, kerr := env.Knobs()
	if kerr != nil {
		kerr = fmt.Errorf("skeinlambda: environment: %w", kerr)
	}
	// The options run even on a malformed environment: the logger they
	// choose reports it (Start).
	cfg.Worker.Registry = reg
	envLogger := cfg.Worker.Logger
	for _, f := range o.handler {
		f(&cfg)
	}
	var chosen *slog.Logger
	if cfg.Worker.Logger != envLogger {
		chosen = cfg.Worker.Logger
	}
	if err := errors.Join(err, kerr); err != nil {
		return nil, chosen, err
	}
	h, err := wire(ctx, &o, env, cfg, kn)
	return h, chosen, err
}

// wire builds the World, seals it when SKEIN_KMS_KEY_ID names a key, and
// the handler.
func wire(ctx context.Context, o *options, env envvars.Vars, cfg handler.Config, kn []knobs.Option) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	w, awsCfg, err := newWorld(ctx, o, env, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Worker.World = w
	if cfg.Worker.Inbox == nil {
		// The webhook function puts large requests in the bucket's inbox,
		// the flow function commits them (handler.NewWebhook).
		cfg.Worker.Inbox = w
	}
	if id := cfg.Resources.KMSKeyID; id != "" {
		// Payloads are sealed before they reach the table, the queue's
		// claim checks or the bucket.
		keys, err := kmskeys.New(kms.NewFromConfig(awsCfg, func(o *kms.Options) {
			o.APIOptions = append(o.APIOptions, deadlineRetries(o.Retryer, time.Now))
		}), id)
		if err != nil {
			return nil, err
		}
		if cfg.Worker.World, err = encrypt.Wrap(w, encrypt.Config{Keys: keys, Logger: cfg.Worker.Logger}); err != nil {
			return nil, err
		}
	}
	if cfg.Worker.Engine.TracerProvider == nil {
		if cfg.Worker.Engine.TracerProvider, err = tracerProviderFromEnv(ctx, env); err != nil {
			return nil, err
		}
	}
	return handlerFor(cfg, w, kn)
}

// handlerFor builds the handler cfg.Kind names. A new kind of function is a
// new case here (and a new Kind in handler).
func handlerFor(cfg handler.Config, w *dynamoworld.World, kn []knobs.Option) (any, error) {
	switch cfg.Kind {
	case handler.KindFlow:
		if cfg.Queue == nil {
			// Failed messages come back once their step lease has expired
			// rather than after the queue's whole visibility timeout.
			cfg.Queue = w
		}
		return handler.NewSQS(cfg, kn...)
	case handler.KindWebhook:
		return handler.NewWebhook(cfg, kn...)
	case handler.KindAPI:
		return handler.NewAPI(cfg, kn...)
	default:
		return nil, fmt.Errorf("skeinlambda: %s=%q: no such handler", envvars.Handler, cfg.Kind)
	}
}

// newWorld loads the AWS configuration (unless an option gave one) and
// builds a dynamoworld.World on the resources cfg names.
func newWorld(ctx context.Context, o *options, env envvars.Vars, cfg handler.Config) (*dynamoworld.World, aws.Config, error) {
	var awsCfg aws.Config
	if o.aws != nil {
		awsCfg = *o.aws
	} else {
		var err error
		// Region, credentials and AWS_ENDPOINT_URL_* come from the environment.
		if awsCfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, awsCfg, fmt.Errorf("skeinlambda: AWS config: %w", err)
		}
	}
	r := cfg.Resources
	clients := dynamoworld.NewClients(awsCfg, dynamoworld.ClientOptions{
		S3PathStyle: r.S3PathStyle,
		// Emulators' error answers lack the CRC32 header DynamoDB sends.
		Emulator: env.EmulatorEndpoint(),
	})
	// A request retries only while its context leaves time for the retry
	// (retry.go): one near the invocation's deadline gives up in time for
	// the handler to answer.
	clients = boundRetries(clients, time.Now)
	// The first TLS handshake loads the system's root certificates: Go
	// parses the whole CA bundle, 10 to 20 ms of CPU. Done here, that is part
	// of the init phase, which runs at full CPU, instead of the first
	// invocation, which gets the function's share of a vCPU.
	if usesSystemRoots(awsCfg, clients) {
		_, _ = x509.SystemCertPool()
	}
	// Streams is left to the World: its Streamer registers each stream in
	// the table, where ListStreams reads them and Limits.MaxStreams counts
	// them (a Streamer built here counted none).
	wc := dynamoworld.Config{
		DynamoDB: clients.DynamoDB, SQS: clients.SQS, S3: clients.S3,
		Table: r.Table, QueueURL: r.QueueURL, Bucket: r.Bucket, ClaimCheckThreshold: r.ClaimCheckThreshold,
		Retention: r.Retention, Logger: cfg.Worker.Logger,
	}
	for _, f := range o.world {
		f(&wc)
	}
	// The stack created the resources; checking them would cost every cold
	// start three requests (and permissions the roles lack).
	w, err := dynamoworld.New(ctx, wc, knobs.WithSkipCheck())
	return w, awsCfg, err
}

// usesSystemRoots says whether a client talks TLS to its endpoint (AWS's
// own, or an https one) and checks it against the system's root
// certificates rather than a custom CA bundle (AWS_CA_BUNDLE).
func usesSystemRoots(cfg aws.Config, c dynamoworld.Clients) bool {
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		if tc := bc.GetTransport().TLSClientConfig; tc != nil && tc.RootCAs != nil {
			return false
		}
	}
	for _, e := range []*string{c.DynamoDB.Options().BaseEndpoint, c.SQS.Options().BaseEndpoint, c.S3.Options().BaseEndpoint} {
		if e == nil {
			return true
		}
		if u, err := url.Parse(*e); err != nil || u.Scheme != "http" {
			return true
		}
	}
	return false
}
