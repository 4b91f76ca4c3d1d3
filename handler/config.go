package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
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
	// where it can be inspected. Past DefaultMaxMalformedReceives receives it
	// is acknowledged instead (a queue without a redrive policy never retries
	// it forever).
	DeadLetter MalformedPolicy = iota
	// Acknowledge deletes it at once; the reason is logged.
	Acknowledge
)

// Defaults, one per setting. ReturnMargin, MaxMalformedReceives and
// WebhookTimeout are not settings: the handlers use these values (Skein's
// tests alone change them).
const (
	// DefaultConcurrency is Config.Worker.Concurrency's default: the records
	// of one batch handled at once (10, the largest SQS batch).
	DefaultConcurrency = 10
	// DefaultTimeBudgetMargin is counted from the invocation's deadline;
	// the engine's margin, counted from the records' context (which ends
	// DefaultReturnMargin earlier), is set from it: TimeBudgetMargin less
	// DefaultReturnMargin (see NewSQS).
	DefaultTimeBudgetMargin = 10 * time.Second
	// DefaultReturnMargin: at the deadline less it the flow handler cancels
	// what still runs (a step that outlived the budget), reports those
	// messages as failed and returns, so that the batch is settled message
	// by message rather than failed whole by a timeout; the API cancels a
	// request still running then, and the webhook handler answers 504.
	DefaultReturnMargin = 500 * time.Millisecond
	// DefaultMaxMalformedReceives bounds the receives of a malformed
	// message under DeadLetter: past it the message is acknowledged.
	DefaultMaxMalformedReceives = 10
	// DefaultWebhookTimeout bounds a webhook request (and in any case the
	// function's deadline less DefaultReturnMargin).
	DefaultWebhookTimeout = 30 * time.Second
	// DefaultMaxRequestBody is Config.MaxRequestBody's default.
	DefaultMaxRequestBody = 1 << 20
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

// Config configures the handlers. Worker.World is required; the flow
// handler and the API also need Worker.Registry. Zero fields take their
// defaults.
type Config struct {
	// Kind is the handler the environment asks for (ConfigFromEnv); the
	// constructors ignore it.
	Kind Kind
	// Resources are the AWS resources from the environment (ConfigFromEnv).
	Resources Resources

	// Worker holds what the handlers share with a Worker: World (required),
	// Registry (required by NewSQS, and by NewAPI, which starts only its
	// workflows and checks inputs against their types; NewWebhook uses it,
	// when set, to read back registered error types), Logger, Engine,
	// Version, Versions, Inbox and Concurrency. Its other fields (Consumer,
	// WebhookAddr, Visibility, StopTimeout, Schedules) are a Worker's and
	// are ignored here.
	//
	// Logger receives the handlers' and the engine's logs (default:
	// discarded). The handlers add the Lambda request ID ("requestId") to
	// every record, so give them a plain handler, such as a JSON handler
	// with lambdacontext.ReplaceAttr, not lambdacontext.NewLogHandler (which
	// would add it twice).
	//
	// Engine tunes the engine. Its Metrics receive the engine's
	// measurements and each message's queue lag (QueueLag); one with a
	// Flush(time.Time) error method, such as the EMF writer ConfigFromEnv
	// sets, is flushed after each batch. Its TracerProvider makes the flow
	// handler's spans too (a skein.invocation span per batch, the engine's
	// under it), and is flushed before each invocation returns when it has
	// a ForceFlush(context.Context) error method, as the OpenTelemetry SDK's
	// provider does: Lambda may freeze the process as soon as the handler
	// returns.
	//
	// Version is the code version recorded on the runs started here
	// (ConfigFromEnv sets it: SKEIN_VERSION; else the VCS revision; else a
	// published Lambda version, "name:7"). Versions, when set, restricts
	// the flow handler to the runs of these versions: a message of another
	// run goes back to the queue for another function.
	//
	// Inbox, when set, holds the webhook requests too large for a queue
	// message between the webhook handler, which puts them there, and the
	// flow handler, which commits them (worker.QueuedWebhookHandler); give
	// both the same one. A dynamoworld.World is one.
	//
	// Concurrency bounds the records of one batch handled at once (default
	// DefaultConcurrency). Continuations of one run are handled one after
	// the other; background steps of one run run concurrently.
	Worker worker.Config

	// TimeBudgetMargin is kept free before the invocation's deadline: no new
	// inline step starts after deadline-TimeBudgetMargin, and the run is
	// continued by a new message; nor does a message of background steps
	// (it is reported failed, for a later delivery) (default 10s). It must
	// exceed DefaultReturnMargin.
	TimeBudgetMargin time.Duration

	// Malformed is the policy for undecodable bodies (default DeadLetter).
	Malformed MalformedPolicy

	// Queue, when set, receives ChangeMessageVisibility-style releases of the
	// messages the flow handler reports as failed (receipt handle = the
	// record's receiptHandle): one abandoned at the deadline comes back once
	// the step lease it holds has expired. Unset, a failed message comes
	// back after the queue's VisibilityTimeout. A dynamoworld.World on the
	// function's queue is one.
	Queue Releaser

	// MaxRequestBody bounds the body of an API request, in bytes (default
	// 1 MiB); a larger one is answered 413.
	MaxRequestBody int64
}

// settings is a Config with its defaults applied, and the knobs the
// constructor was given (Skein's tests' and wiring's).
type settings struct {
	Config
	now                  func() time.Time
	returnMargin         time.Duration
	webhookTimeout       time.Duration
	maxMalformedReceives int
	// retryDelay, with Queue, is how long a failed message stays hidden
	// given its receive count (nil: leave the queue's visibility timeout).
	retryDelay func(attempt int) time.Duration
	// opts are passed on to the Processor and the clients.
	opts []knobs.Option
}

// settle applies c's defaults and the knobs opts.
func (c Config) settle(opts []knobs.Option) settings {
	k := knobs.Apply(opts)
	s := settings{Config: c, now: k.Now, returnMargin: k.ReturnMargin, webhookTimeout: k.WebhookTimeout,
		maxMalformedReceives: k.MaxMalformedReceives, retryDelay: k.RetryDelay, opts: opts}
	if s.Worker.Logger == nil {
		s.Worker.Logger = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.TimeBudgetMargin == 0 {
		s.TimeBudgetMargin = DefaultTimeBudgetMargin
	}
	if s.returnMargin == 0 {
		s.returnMargin = DefaultReturnMargin
	}
	if s.Worker.Concurrency == 0 {
		s.Worker.Concurrency = DefaultConcurrency
	}
	if s.maxMalformedReceives == 0 {
		s.maxMalformedReceives = DefaultMaxMalformedReceives
	}
	if s.webhookTimeout == 0 {
		s.webhookTimeout = DefaultWebhookTimeout
	}
	if s.MaxRequestBody == 0 {
		s.MaxRequestBody = DefaultMaxRequestBody
	}
	return s
}

// validate checks settings, each error naming the Config's field.
func (s settings) validate(needRegistry bool) error {
	var errs []error
	if s.Worker.World == nil {
		errs = append(errs, errors.New("no Worker.World: one is required"))
	}
	if needRegistry && s.Worker.Registry == nil {
		errs = append(errs, errors.New("no Worker.Registry: one is required"))
	}
	if s.returnMargin < 0 {
		errs = append(errs, fmt.Errorf("the return margin is negative (%s)", s.returnMargin))
	}
	if s.TimeBudgetMargin <= s.returnMargin {
		errs = append(errs, fmt.Errorf("TimeBudgetMargin (%s) must exceed the return margin (%s)", s.TimeBudgetMargin, s.returnMargin))
	}
	if s.Worker.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("negative Worker.Concurrency (%d)", s.Worker.Concurrency))
	}
	if s.Malformed != DeadLetter && s.Malformed != Acknowledge {
		errs = append(errs, fmt.Errorf("unknown Malformed policy %d", s.Malformed))
	}
	if s.maxMalformedReceives < 0 {
		errs = append(errs, fmt.Errorf("the malformed receives' bound is negative (%d)", s.maxMalformedReceives))
	}
	if s.webhookTimeout < 0 {
		errs = append(errs, fmt.Errorf("the webhook timeout is negative (%s)", s.webhookTimeout))
	}
	if s.MaxRequestBody < 0 {
		errs = append(errs, fmt.Errorf("MaxRequestBody is negative (%d)", s.MaxRequestBody))
	}
	if err := errors.Join(errs...); err != nil {
		return cfgerr.Invalid(fmt.Errorf("handler: invalid config: %w", err))
	}
	return nil
}
