package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
	"go.opentelemetry.io/otel/trace"
)

// Kind selects the handler a function serves (SKEIN_HANDLER).
type Kind string

// The handlers. One binary serves both functions of the template.
const (
	// KindFlow is the SQS-triggered flow handler (NewSQS).
	KindFlow Kind = "flow"
	// KindWebhook is the webhook HTTP handler behind a Function URL or an
	// API Gateway HTTP API (NewWebhook).
	KindWebhook Kind = "webhook"
	// KindAPI is the HTTP API (start, status, result, cancel, hooks,
	// streams) behind a Function URL with AWS_IAM auth (NewAPI).
	KindAPI Kind = "api"
)

// MalformedPolicy says what the flow handler does with a message whose body
// is not a queue message it can decode.
type MalformedPolicy int

const (
	// DeadLetter reports the message as failed, so that the queue's redrive
	// policy moves it to the dead-letter queue after maxReceiveCount receives,
	// where it can be inspected. Past Config.MaxMalformedReceives receives it
	// is acknowledged instead (a queue without a redrive policy never retries
	// it forever).
	DeadLetter MalformedPolicy = iota
	// Acknowledge deletes it at once; the reason is logged.
	Acknowledge
)

// Defaults.
const (
	DefaultConcurrency = 10
	// DefaultTimeBudgetMargin is counted from the invocation's deadline;
	// the engine's BudgetMargin, counted from the records' context (which
	// ends ReturnMargin earlier), is set from it: TimeBudgetMargin less
	// ReturnMargin (see NewSQS).
	DefaultTimeBudgetMargin     = 10 * time.Second
	DefaultReturnMargin         = 500 * time.Millisecond
	DefaultMaxMalformedReceives = 10
	DefaultWebhookTimeout       = 30 * time.Second
	DefaultMaxRequestBody       = 1 << 20
)

// Resources names what a World on AWS needs, as the environment gives them.
// The handlers do not use them (they are handed a World); the Lambda main
// builds the World from them.
type Resources struct {
	Table    string
	QueueURL string
	Bucket   string
	// ClaimCheckThreshold is the payload size (bytes) above which payloads go
	// to S3 (0: the World's default).
	ClaimCheckThreshold int
	// S3PathStyle addresses buckets in the path, as S3 emulators need.
	S3PathStyle bool
	// Retention is how long a finished run is kept (dynamoworld's
	// Config.Retention; 0: forever). The template derives the bucket's
	// object expiration from the same setting (RetentionDays), so every
	// World on the stack's table must be given it.
	Retention time.Duration
	// KMSKeyID, when set, seals the runs' payloads with data keys drawn
	// under this KMS key (see package encrypt and encrypt/kmskeys); runs
	// created before keep theirs in clear.
	KMSKeyID string
}

// Releaser is what the flow handler needs of the queue its messages come
// from (world.Consumer's Release): a failed message's visibility.
type Releaser interface {
	Release(ctx context.Context, p *world.ReleaseParams) error
}

// Config configures the handlers. World is required; the flow handler and
// the API also need Registry. Zero fields take their defaults.
type Config struct {
	// Kind is the handler the environment asks for (ConfigFromEnv); the
	// constructors ignore it.
	Kind Kind
	// Resources are the AWS resources from the environment (ConfigFromEnv).
	Resources Resources

	// World is where runs live (required).
	World world.World
	// Registry holds the workflows and steps (required by NewSQS, and by
	// NewAPI, which starts only its workflows and checks inputs against
	// their types; NewWebhook uses it, when set, to read back registered
	// error types).
	Registry *workflow.Registry
	// Logger receives the handlers' and the engine's logs (default:
	// discarded). The handlers add the Lambda request ID ("requestId") to
	// every record, so give them a plain handler, such as a JSON handler
	// with lambdacontext.ReplaceAttr, not lambdacontext.NewLogHandler (which
	// would add it twice).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Engine tunes the engine (InlineConcurrency, StepLeaseTTL, ...). Leave
	// its BudgetMargin zero: the handler sets it from TimeBudgetMargin (less
	// ReturnMargin), and a Config that sets it is refused.
	Engine worker.EngineOptions
	// Version is the code version recorded on the runs started here (child
	// runs; see worker.ProcessorConfig.Version). ConfigFromEnv sets it
	// (SKEIN_VERSION; else the VCS revision; else a published Lambda
	// version, "name:7"); empty: sdk.DefaultVersion.
	Version string
	// Versions, when set, restricts the flow handler to the runs of these
	// versions: a message of another run goes back to the queue for
	// another function (see worker.ProcessorConfig.Versions).
	Versions worker.VersionFilter

	// TimeBudgetMargin is kept free before the invocation's deadline: no new
	// inline step starts after deadline-TimeBudgetMargin, and the run is
	// continued by a new message; nor does a message of background steps
	// (it is reported failed, for a later delivery) (default 10s). It must
	// exceed ReturnMargin.
	TimeBudgetMargin time.Duration
	// ReturnMargin: at deadline-ReturnMargin the handler cancels what still
	// runs (a step that outlived the budget), reports those messages as
	// failed and returns, so that the batch is settled message by message
	// rather than failed whole by a timeout (default 500ms).
	ReturnMargin time.Duration
	// Concurrency bounds the records of one batch handled at once (default
	// 10, the largest SQS batch). Continuations of one run are handled one
	// after the other; background steps of one run run concurrently.
	Concurrency int

	// Malformed is the policy for undecodable bodies (default DeadLetter).
	Malformed MalformedPolicy
	// MaxMalformedReceives bounds the receives of a malformed message under
	// DeadLetter: past it the message is acknowledged (default 10).
	MaxMalformedReceives int

	// Queue, when set, receives ChangeMessageVisibility-style releases of the
	// messages the flow handler reports as failed (receipt handle = the
	// record's receiptHandle): one abandoned at the deadline comes back once
	// the step lease it holds has expired, one that failed comes back after
	// RetryDelay. Unset, a failed message comes back after the queue's
	// VisibilityTimeout. A dynamoworld.World on the function's queue is one.
	Queue Releaser
	// RetryDelay, with Queue, is how long a failed message stays hidden
	// given its receive count (default: leave the queue's visibility
	// timeout).
	RetryDelay func(attempt int) time.Duration

	// Metrics, when set, receives the flow handler's measurements: the
	// engine's (unless Engine.Metrics is set) and each message's queue lag
	// (QueueLag). One with a Flush(time.Time) error method,
	// such as the EMF writer ConfigFromEnv sets, is flushed after each batch.
	Metrics worker.Metrics

	// TracerProvider, when set, makes the flow handler's spans (a
	// skein.invocation span per batch, the engine's spans under it; see
	// worker.EngineOptions.TracerProvider) and is flushed before each
	// invocation returns when it has a ForceFlush(context.Context) error
	// method, as the OpenTelemetry SDK's provider does: Lambda may freeze
	// the process as soon as the handler returns.
	TracerProvider trace.TracerProvider

	// WebhookTimeout bounds a webhook request (default 30s, and in any case
	// the function's deadline less ReturnMargin).
	WebhookTimeout time.Duration
	// Inbox, when set, holds the webhook requests too large for a queue
	// message between the webhook handler, which puts them there, and the
	// flow handler, which commits them (worker.QueuedWebhookHandler);
	// give both the same one. A dynamoworld.World is one.
	Inbox worker.Inbox

	// MaxRequestBody bounds the body of an API request, in bytes (default
	// 1 MiB); a larger one is answered 413.
	MaxRequestBody int64
}

// withDefaults returns a copy of c with defaults applied.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.TimeBudgetMargin == 0 {
		c.TimeBudgetMargin = DefaultTimeBudgetMargin
	}
	if c.ReturnMargin == 0 {
		c.ReturnMargin = DefaultReturnMargin
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxMalformedReceives == 0 {
		c.MaxMalformedReceives = DefaultMaxMalformedReceives
	}
	if c.WebhookTimeout == 0 {
		c.WebhookTimeout = DefaultWebhookTimeout
	}
	if c.MaxRequestBody == 0 {
		c.MaxRequestBody = DefaultMaxRequestBody
	}
	return c
}

// validate checks a Config after withDefaults.
func (c Config) validate(needRegistry bool) error {
	var errs []error
	if c.World == nil {
		errs = append(errs, errors.New("no World: one is required"))
	}
	if needRegistry && c.Registry == nil {
		errs = append(errs, errors.New("no Registry: one is required"))
	}
	if c.ReturnMargin < 0 {
		errs = append(errs, fmt.Errorf("ReturnMargin is negative (%s)", c.ReturnMargin))
	}
	if c.TimeBudgetMargin <= c.ReturnMargin {
		errs = append(errs, fmt.Errorf("TimeBudgetMargin (%s) must exceed ReturnMargin (%s)", c.TimeBudgetMargin, c.ReturnMargin))
	}
	if c.Engine.BudgetMargin != 0 {
		errs = append(errs, fmt.Errorf("Engine.BudgetMargin is set (%s): set TimeBudgetMargin instead (the handler derives the engine's margin from it)", c.Engine.BudgetMargin))
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("negative Concurrency (%d)", c.Concurrency))
	}
	if c.Malformed != DeadLetter && c.Malformed != Acknowledge {
		errs = append(errs, fmt.Errorf("unknown Malformed policy %d", c.Malformed))
	}
	if c.MaxMalformedReceives < 0 {
		errs = append(errs, fmt.Errorf("MaxMalformedReceives is negative (%d)", c.MaxMalformedReceives))
	}
	if c.WebhookTimeout < 0 {
		errs = append(errs, fmt.Errorf("WebhookTimeout is negative (%s)", c.WebhookTimeout))
	}
	if c.MaxRequestBody < 0 {
		errs = append(errs, fmt.Errorf("MaxRequestBody is negative (%d)", c.MaxRequestBody))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handler: invalid config: %w", err)
	}
	return nil
}
