package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

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
	DefaultConcurrency          = 10
	DefaultTimeBudgetMargin     = 10 * time.Second
	DefaultReturnMargin         = 500 * time.Millisecond
	DefaultMaxMalformedReceives = 10
	DefaultWebhookTimeout       = 30 * time.Second
	DefaultMaxRequestBody       = 1 << 20
)

// maxRetentionDays bounds SKEIN_RETENTION_DAYS (100 years).
const maxRetentionDays = 36500

// Environment variables ConfigFromEnv reads. The first nine are the ones
// template.yaml sets; the others are optional tuning, mostly for tests.
const (
	EnvHandler             = "SKEIN_HANDLER"               // flow | webhook | api
	EnvTable               = "SKEIN_TABLE"                 // DynamoDB table
	EnvQueueURL            = "SKEIN_QUEUE_URL"             // SQS queue URL
	EnvBucket              = "SKEIN_BUCKET"                // S3 bucket
	EnvInlineConcurrency   = "SKEIN_INLINE_CONCURRENCY"    // steps run as goroutines per invocation
	EnvTimeBudgetMargin    = "SKEIN_TIME_BUDGET_MARGIN"    // Go duration kept free before the deadline
	EnvClaimCheckThreshold = "SKEIN_CLAIM_CHECK_THRESHOLD" // bytes
	EnvRetentionDays       = "SKEIN_RETENTION_DAYS"        // days a finished run is kept (0: forever)
	EnvS3PathStyle         = "SKEIN_S3_PATH_STYLE"         // 1: path-style S3 addressing (emulators)
	EnvStepLeaseTTL        = "SKEIN_STEP_LEASE_TTL"        // Go duration: a step attempt's lease
	EnvRunLeaseTTL         = "SKEIN_RUN_LEASE_TTL"         // Go duration: a continuation's run lease
	EnvMaxQueueDelay       = "SKEIN_MAX_QUEUE_DELAY"       // Go duration: longest delay of one message (hops beyond)
	EnvMaxInterruptions    = "SKEIN_MAX_INTERRUPTIONS"     // lost executors a step attempt survives
	EnvHoldRetryDelay      = "SKEIN_HOLD_RETRY_DELAY"      // Go duration: a held run's first retry
	EnvHoldRetryLimit      = "SKEIN_HOLD_RETRY_LIMIT"      // Go duration: the longest wait between retries
	EnvConcurrency         = "SKEIN_RECORD_CONCURRENCY"    // records of a batch handled at once
	EnvMalformed           = "SKEIN_MALFORMED"             // dead-letter (default) | acknowledge
	EnvLogLevel            = "AWS_LAMBDA_LOG_LEVEL"        // debug | info | warn | error (Lambda's own)
	EnvMetricsNamespace    = "SKEIN_METRICS_NAMESPACE"     // CloudWatch namespace of the EMF metrics (empty: none)
	EnvKMSKeyID            = "SKEIN_KMS_KEY_ID"            // KMS key sealing the runs' payloads (empty: in clear)
	EnvVersion             = "SKEIN_VERSION"               // the code version recorded on the runs started here
	EnvVersions            = "SKEIN_VERSIONS"              // comma-separated versions the flow function runs (- : none recorded)
	EnvVersionRetryDelay   = "SKEIN_VERSION_RETRY_DELAY"   // Go duration: first delay of a message left for another version
	EnvVersionRetryLimit   = "SKEIN_VERSION_RETRY_LIMIT"   // Go duration: the longest such delay
	EnvFunctionVersion     = "AWS_LAMBDA_FUNCTION_VERSION" // Lambda's own: "$LATEST" or a published version
	EnvFunctionName        = "AWS_LAMBDA_FUNCTION_NAME"    // Lambda's own
)

// NoVersion stands for "no version recorded" in SKEIN_VERSIONS.
const NoVersion = "-"

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
	// Engine tunes the engine (InlineConcurrency, StepLeaseTTL, ...). Its
	// BudgetMargin is ignored: TimeBudgetMargin sets it.
	Engine workflow.EngineOptions
	// Version is the code version recorded on the runs started here (child
	// runs; see workflow.ProcessorConfig.Version). ConfigFromEnv sets it
	// (see FunctionVersion); empty: workflow.DefaultVersion.
	Version string
	// Versions, when set, restricts the flow handler to the runs of these
	// versions: a message of another run goes back to the queue for
	// another function (see workflow.ProcessorConfig.Versions).
	Versions workflow.VersionFilter

	// TimeBudgetMargin is kept free before the invocation's deadline: no new
	// inline step starts after deadline-TimeBudgetMargin, and the run is
	// continued by a new message (default 10s). It must exceed ReturnMargin.
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
	// (workflow.MetricQueueLag). One with a Flush(time.Time) error method,
	// such as an *EMF, is flushed after each batch.
	Metrics workflow.Metrics

	// TracerProvider, when set, makes the flow handler's spans (a
	// skein.invocation span per batch, the engine's spans under it; see
	// workflow.EngineOptions.TracerProvider) and is flushed before each
	// invocation returns when it has a ForceFlush(context.Context) error
	// method, as the OpenTelemetry SDK's provider does: Lambda may freeze
	// the process as soon as the handler returns.
	TracerProvider trace.TracerProvider

	// WebhookTimeout bounds a webhook request (default 30s, and in any case
	// the function's deadline less ReturnMargin).
	WebhookTimeout time.Duration
	// Inbox, when set, holds the webhook requests too large for a queue
	// message between the webhook handler, which puts them there, and the
	// flow handler, which commits them (workflow.Client.QueuedWebhookHandler);
	// give both the same one. A dynamoworld.World is one.
	Inbox workflow.Inbox

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

// ConfigFromEnv reads the configuration template.yaml gives a function (see
// the Env constants); getenv is os.Getenv when nil. It fills Kind,
// Resources, Engine (InlineConcurrency, StepLeaseTTL, RunLeaseTTL,
// MaxQueueDelay), TimeBudgetMargin, Concurrency, Malformed and a JSON Logger
// on stdout (at AWS_LAMBDA_LOG_LEVEL, default info); the caller adds the
// World and the Registry. Every malformed variable is reported, by name.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var cfg Config
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	atoi := func(name string, dst *int, lo, hi int) {
		v := get(name)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s=%q: not an integer", name, v))
		case n < lo || n > hi:
			errs = append(errs, fmt.Errorf("%s=%d: want %d to %d", name, n, lo, hi))
		default:
			*dst = n
		}
	}
	duration := func(name string, dst *time.Duration) {
		v := get(name)
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s=%q: not a Go duration (such as 10s or 1m30s)", name, v))
		case d <= 0:
			errs = append(errs, fmt.Errorf("%s=%q: must be positive", name, v))
		default:
			*dst = d
		}
	}

	switch k := Kind(strings.ToLower(get(EnvHandler))); k {
	case KindFlow, KindWebhook, KindAPI:
		cfg.Kind = k
	case "":
		errs = append(errs, fmt.Errorf("%s is not set: want %q, %q or %q", EnvHandler, KindFlow, KindWebhook, KindAPI))
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want %q, %q or %q", EnvHandler, k, KindFlow, KindWebhook, KindAPI))
	}
	cfg.Resources.Table = get(EnvTable)
	cfg.Resources.QueueURL = get(EnvQueueURL)
	cfg.Resources.Bucket = get(EnvBucket)
	cfg.Resources.KMSKeyID = get(EnvKMSKeyID)
	for _, name := range []string{EnvTable, EnvQueueURL, EnvBucket} {
		if get(name) == "" {
			errs = append(errs, fmt.Errorf("%s is not set", name))
		}
	}
	atoi(EnvClaimCheckThreshold, &cfg.Resources.ClaimCheckThreshold, 1024, 1<<30)
	var days int
	atoi(EnvRetentionDays, &days, 0, maxRetentionDays)
	cfg.Resources.Retention = time.Duration(days) * 24 * time.Hour
	switch v := strings.ToLower(get(EnvS3PathStyle)); v {
	case "", "0", "false":
	case "1", "true":
		cfg.Resources.S3PathStyle = true
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want 1 or 0", EnvS3PathStyle, v))
	}
	atoi(EnvInlineConcurrency, &cfg.Engine.InlineConcurrency, 1, 1<<16)
	atoi(EnvConcurrency, &cfg.Concurrency, 1, 1<<10)
	duration(EnvTimeBudgetMargin, &cfg.TimeBudgetMargin)
	duration(EnvStepLeaseTTL, &cfg.Engine.StepLeaseTTL)
	duration(EnvRunLeaseTTL, &cfg.Engine.RunLeaseTTL)
	duration(EnvMaxQueueDelay, &cfg.Engine.MaxQueueDelay)
	atoi(EnvMaxInterruptions, &cfg.Engine.MaxInterruptions, 1, 1<<16)
	duration(EnvHoldRetryDelay, &cfg.Engine.HoldRetryDelay)
	duration(EnvHoldRetryLimit, &cfg.Engine.HoldRetryLimit)
	duration(EnvVersionRetryDelay, &cfg.Engine.VersionRetryDelay)
	duration(EnvVersionRetryLimit, &cfg.Engine.VersionRetryLimit)
	if cfg.Engine.MaxQueueDelay > 15*time.Minute {
		errs = append(errs, fmt.Errorf("%s=%s: SQS delays a message by at most 15m", EnvMaxQueueDelay, cfg.Engine.MaxQueueDelay))
	}
	switch v := strings.ToLower(get(EnvMalformed)); v {
	case "", "dead-letter", "deadletter", "dlq":
		cfg.Malformed = DeadLetter
	case "acknowledge", "ack":
		cfg.Malformed = Acknowledge
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want dead-letter or acknowledge", EnvMalformed, v))
	}
	cfg.Version = FunctionVersion(get)
	if err := world.CheckVersion(cfg.Version); err != nil {
		errs = append(errs, fmt.Errorf("%s=%q: %w", EnvVersion, cfg.Version, err))
	}
	if v := get(EnvVersions); v != "" {
		vs, err := parseVersions(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvVersions, v, err))
		}
		cfg.Versions = vs
	}
	level := slog.LevelInfo
	if v := get(EnvLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want debug, info, warn or error", EnvLogLevel, v))
		}
	}
	cfg.Logger = NewJSONLogger(os.Stdout, level)
	if ns := get(EnvMetricsNamespace); ns != "" {
		if !validNamespace(ns) {
			errs = append(errs, fmt.Errorf("%s=%q: want 1 to 255 of letters, digits and . - _ / # : or space, not starting with AWS/", EnvMetricsNamespace, ns))
		}
		var dims map[string]string
		if fn := get("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
			dims = map[string]string{"FunctionName": fn}
		}
		cfg.Metrics = NewEMF(os.Stdout, ns, dims)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("handler: environment: %w", err)
	}
	return cfg, nil
}

// validNamespace reports whether ns is a CloudWatch namespace a user may
// publish to.
func validNamespace(ns string) bool {
	if len(ns) == 0 || len(ns) > 255 || strings.HasPrefix(ns, "AWS/") {
		return false
	}
	for _, c := range ns {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_/#: ", c)
		if !ok {
			return false
		}
	}
	return true
}

// FunctionVersion is the code version a function records on the runs it
// starts, from its environment (getenv; os.Getenv when nil): SKEIN_VERSION
// when set (set it to the same value on every function and client of a
// deploy, e.g. a release name or the commit: it is what pins runs to the
// code that started them); else the VCS revision the binary was built from
// (workflow.DefaultVersion); else, for a published Lambda version, the
// function's name and version ("my-flow:7"). "$LATEST" is not a version of
// anything (its code changes with every deploy): it gives "".
func FunctionVersion(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := strings.TrimSpace(getenv(EnvVersion)); v != "" {
		return v
	}
	if v := workflow.DefaultVersion(); v != "" {
		return v
	}
	fv := strings.TrimSpace(getenv(EnvFunctionVersion))
	if fv == "" || fv == "$LATEST" {
		return ""
	}
	if name := strings.TrimSpace(getenv(EnvFunctionName)); name != "" {
		return name + ":" + fv
	}
	return fv
}

// parseVersions reads SKEIN_VERSIONS: versions separated by commas, NoVersion
// for the runs that recorded none.
func parseVersions(s string) (workflow.Versions, error) {
	var vs workflow.Versions
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return nil, errors.New("an empty item (write " + NoVersion + " for the runs that recorded no version)")
		case v == NoVersion:
			v = ""
		default:
			if err := world.CheckVersion(v); err != nil {
				return nil, err
			}
		}
		vs = append(vs, v)
	}
	return vs, nil
}
