package engine

import (
	"go.opentelemetry.io/otel/trace"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/skeinflow/skein/internal/awslimits"
	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// Workflow is a registered workflow function. Fn runs as the run's coroutine;
// it must be deterministic and use only c for time, randomness and waiting.
type Workflow struct {
	Name string
	Fn   func(c *Context, input json.RawMessage) (json.RawMessage, error)
	// Cleanup, when set, runs once a run of the workflow has completed
	// (never for a failed or cancelled one), after run_completed commits and
	// before the end is signalled (see cleanup.go). Its error, panic or
	// timeout is recorded and logged; the run stays completed.
	Cleanup func(ctx context.Context, c *CleanupInfo) error
	// CleanupTimeout bounds one call of Cleanup (DefaultCleanupTimeout
	// when zero).
	CleanupTimeout time.Duration
	// CompensateOnFailure makes a run that fails ask for its completed
	// steps' compensations (world.RunFailed.Compensate): they run after the
	// end, before the run is deactivated (compensate.go).
	CompensateOnFailure bool
}

// Step is a registered step function with its retry policy.
type Step struct {
	Name string
	// Fn runs once per attempt. An error it returns may be a *Failure saying
	// how to record it and whether to retry; any other error is recorded by
	// Config.EncodeError and retried by policy.
	Fn func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)
	// MaxRetries is the number of retries after the first attempt (negative
	// counts as zero).
	MaxRetries int
	// Backoff returns the delay before retry n (1-based); nil means
	// DefaultBackoff.
	Backoff func(retry int) time.Duration
	// Timeout, when positive, bounds one attempt: the step's context is
	// cancelled when it passes and the attempt fails with a timeout, which
	// is retried like any failure (see runStep).
	Timeout time.Duration
}

// Registry resolves workflows and steps by name.
type Registry interface {
	Workflow(name string) (*Workflow, bool)
	Step(name string) (*Step, bool)
}

// Defaults: each setting's one default (the leases are the World's, see
// world.DefaultStepLease).
const (
	DefaultInlineConcurrency = 16
	DefaultRunLeaseTTL       = world.DefaultRunLease
	DefaultStepLeaseTTL      = world.DefaultStepLease
	DefaultRunPollInterval   = time.Second
	DefaultEventPollInterval = time.Second
	// DefaultBudgetMargin is kept free before the context's deadline. The
	// Lambda handler sets its own (handler.Config.TimeBudgetMargin, counted
	// from the invocation's deadline).
	DefaultBudgetMargin      = 5 * time.Second
	DefaultMaxInvocation     = 10 * time.Minute
	DefaultLeaseRetryDelay   = 100 * time.Millisecond
	DefaultMaxQueueDelay     = awslimits.MaxQueueDelay
	DefaultMaxDeliveries     = 48
	DefaultReplaceAfter      = 3
	DefaultMaxInterruptions  = 10
	DefaultLinger            = 250 * time.Millisecond
	DefaultHoldRetryDelay    = time.Minute
	DefaultHoldRetryLimit    = time.Hour
	DefaultVersionRetryDelay = time.Second
	DefaultVersionRetryLimit = time.Minute
	DefaultMaxSlice          = 30 * time.Second
	DefaultLogCacheBytes     = 32 << 20
)

// Options are the engine's settings a user tunes: worker.EngineOptions is
// this type, set as worker.Config.Engine (and the Lambda handler's
// Config.Worker.Engine). Zero fields take their defaults. The engine's
// other settings are Skein's own (Config, and the knobs its wiring and
// tests pass).
type Options struct {
	// InlineConcurrency bounds the steps one invocation runs as goroutines;
	// the excess is queued for other workers (default 16).
	InlineConcurrency int
	// RunLeaseTTL is the per-run lease a continuation holds while it runs
	// the workflow, renewed every third of it as it goes; a continuation
	// whose process died blocks the run until it expires (default 30s). A
	// continuation that loses its lease (a renewal refused, or failing for
	// two thirds of it) stops at once: its steps in flight see their context
	// cancelled and it commits nothing more.
	RunLeaseTTL time.Duration
	// StepLeaseTTL is a step attempt's exclusive lease (a compensation
	// attempt's too), renewed every third of it while it runs; a step whose
	// worker died re-runs once it expires (default 1m), or at once when the
	// World expires it earlier (a local store reopened after its process
	// died).
	StepLeaseTTL time.Duration
	// MaxSlice bounds how long workflow code may run between two calls of
	// the workflow API (default 30s): code that blocks on anything else (a
	// channel, a mutex, time.Sleep, a long loop) for longer fails its run
	// with REPLAY_TIMEOUT, and the goroutine it blocks is abandoned, not
	// waited for (see Determinism in the workflow package doc).
	MaxSlice time.Duration
	// MaxDeliveries fails a run whose message was delivered more often
	// (MAX_DELIVERIES_EXCEEDED; default 48). A message received three times
	// is sent again as a new message (acknowledging the old), so that a
	// queue's receive limit (SQS's maxReceiveCount) never dead-letters a
	// run whose executors died; MaxDeliveries counts the deliveries of
	// both. Receives of a message that executors of other versions sent
	// back (worker.Config.Versions) may be theirs: at the limit such a
	// message is sent again counting one.
	MaxDeliveries int
	// MaxInterruptions bounds how often a step attempt may be interrupted by
	// the loss of its executor (a worker killed or cut off mid-step, before
	// it recorded an outcome). Such an attempt runs again as the same
	// attempt, without using the step's retries; a step interrupted more
	// often fails with STEP_EXECUTOR_LOST (default 10).
	MaxInterruptions int
	// HoldRetryDelay is how long a run held by a replay divergence waits
	// before it is replayed again (default 1m), doubling with each hold in
	// a row up to HoldRetryLimit (default 1h, and at least HoldRetryDelay).
	// Deploying code that replays the log again resumes the run at its
	// next retry, or at once on request (Client.RetryRun).
	HoldRetryDelay, HoldRetryLimit time.Duration
	// LogCacheBytes bounds the run logs kept in memory between a run's
	// invocations in this process, so that the next one (a hook payload's
	// wake-up, say) loads only what was appended since instead of the whole
	// log (default 32 MiB of payloads; negative keeps none). With its log,
	// a run's workflow is kept alive where it waits (up to 64 runs, a
	// goroutine each, counted as 64 KiB each, least recently used stopped
	// first), so that the next invocation hands it what is new instead of
	// replaying it from its start; a Worker stops them when Run returns.
	LogCacheBytes int
	// TracerProvider makes OpenTelemetry spans: skein.message per queue
	// message, skein.run per run session and skein.step per step attempt,
	// with the run, workflow, step and attempt as attributes. A run started
	// under a span (Client.Start's context) records its trace context, and
	// every session and step of the run, in whatever process or invocation,
	// joins that trace; the message span, in the handling process's trace,
	// is linked. The Lambda handler adds a skein.invocation span per batch
	// and flushes a provider with a ForceFlush(context.Context) error
	// method before each invocation returns. Default: OpenTelemetry's
	// global provider (a no-op unless the program sets one).
	TracerProvider trace.TracerProvider
	// Metrics, when set, counts runs and steps as their events commit: the
	// Metric names say what. The Lambda handler adds each message's queue
	// lag (QueueLag), and flushes one with a Flush(time.Time) error method
	// (such as the EMF writer it builds from SKEIN_METRICS_NAMESPACE) after
	// each batch.
	Metrics Metrics
}

// Config configures an Engine: the user's Options and the settings Skein's
// own code sets (the host's, and the knobs of its wiring and tests). Zero
// fields take their defaults.
type Config struct {
	World    world.World
	Registry Registry
	// Logger receives operational messages and the run lifecycle: run
	// started, completed, failed and held at Info and Warn, step retrying
	// and failed at Warn, step started and completed at Debug (default:
	// discarded).
	Logger *slog.Logger
	Options
	// Now is the clock (default time.Now; knobs.WithNow).
	Now func() time.Time

	// RunPollInterval is how often a running step checks whether its run has
	// ended, to cancel its context (default 1s).
	RunPollInterval time.Duration
	// EventPollInterval is how often an invocation waiting for inline steps
	// looks for events other writers appended (default 1s).
	EventPollInterval time.Duration
	// BudgetMargin is kept free before the context deadline: no new inline
	// step starts after deadline-margin, and the run is continued by a new
	// message (default 5s; the Lambda handler sets it from its
	// TimeBudgetMargin).
	BudgetMargin time.Duration
	// MaxInvocation bounds one invocation when the context has no deadline
	// (default 10m).
	MaxInvocation time.Duration
	// LeaseRetryDelay is the delay of a continuation re-enqueued because the
	// run lease was held (default 100ms).
	LeaseRetryDelay time.Duration
	// MaxQueueDelay is the longest delay the queue accepts; longer waits
	// chain hops (default 15m, the SQS limit; skeinlambda sets it from
	// SKEIN_MAX_QUEUE_DELAY).
	MaxQueueDelay time.Duration
	// ReplaceAfter is the delivery count (the queue's receive count) at
	// which a message is sent again as a new message, carrying its count
	// on in world.Message.Delivered, and acknowledged, so that a run whose
	// executors keep dying never has its message dead-lettered by a
	// queue's receive limit (SQS's maxReceiveCount must be above it).
	// Default 3; negative: never.
	ReplaceAfter int
	// BackgroundDelay holds back the steps beyond the inline capacity: for
	// that long the invocation may start them inline as its slots free up,
	// and only those still waiting are then queued with their step ID (all
	// of them at once if the invocation ends first). Zero (the default)
	// queues them at once, as on Lambda, where other invocations bring more
	// CPUs; a local worker (50ms) saves the queue round trips of short steps.
	BackgroundDelay time.Duration
	// Linger is how long an invocation with nothing to run waits in process
	// for a timer rather than scheduling a continuation (default 250ms).
	// Negative disables lingering. A timer's continuation is sent up to
	// Linger (at most 20ms) before the timer is due, to linger for it.
	Linger time.Duration
	// AcceptVersion, when set, says which runs' code versions
	// (world.Run.Version) this engine executes; a message of a run of any
	// other version is sent back to the queue for a compatible executor
	// (see version.go). Nil executes every run.
	AcceptVersion func(version string) bool
	// VersionRetryDelay is the delay of a message sent back for another
	// executor (default 1s), doubling with each refusal of it up to
	// VersionRetryLimit (default 1m; skeinlambda sets both from
	// SKEIN_VERSION_RETRY_DELAY and SKEIN_VERSION_RETRY_LIMIT).
	VersionRetryDelay, VersionRetryLimit time.Duration
	// EncodeError records an error that is not a *Failure (default: its
	// message and Go type).
	EncodeError func(error) *world.ErrorData
	// StepContext, when set, decorates the context of every step execution
	// (the SDK adds its client).
	StepContext func(ctx context.Context) context.Context
	// Entropy feeds owner IDs (default crypto/rand; knobs.WithEntropy).
	Entropy io.Reader
}

// withKnobs returns c with the knobs opts set (a knob left zero leaves its
// setting as c has it).
func (c Config) withKnobs(opts ...knobs.Option) Config {
	k := knobs.Apply(opts)
	if k.Now != nil {
		c.Now = k.Now
	}
	if k.Entropy != nil {
		c.Entropy = k.Entropy
	}
	for _, d := range []struct {
		dst *time.Duration
		v   time.Duration
	}{
		{&c.RunPollInterval, k.RunPollInterval}, {&c.EventPollInterval, k.EventPollInterval},
		{&c.Linger, k.Linger}, {&c.MaxQueueDelay, k.MaxQueueDelay}, {&c.MaxInvocation, k.MaxInvocation},
		{&c.BudgetMargin, k.BudgetMargin}, {&c.VersionRetryDelay, k.VersionRetryDelay},
		{&c.VersionRetryLimit, k.VersionRetryLimit},
	} {
		if d.v != 0 {
			*d.dst = d.v
		}
	}
	if k.BackgroundDelay != 0 {
		c.BackgroundDelay = max(k.BackgroundDelay, 0) // negative: none
	}
	return c
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.InlineConcurrency == 0 {
		c.InlineConcurrency = DefaultInlineConcurrency
	}
	if c.RunLeaseTTL == 0 {
		c.RunLeaseTTL = DefaultRunLeaseTTL
	}
	if c.StepLeaseTTL == 0 {
		c.StepLeaseTTL = DefaultStepLeaseTTL
	}
	if c.RunPollInterval == 0 {
		c.RunPollInterval = DefaultRunPollInterval
	}
	if c.EventPollInterval == 0 {
		c.EventPollInterval = DefaultEventPollInterval
	}
	if c.BudgetMargin == 0 {
		c.BudgetMargin = DefaultBudgetMargin
	}
	if c.MaxInvocation == 0 {
		c.MaxInvocation = DefaultMaxInvocation
	}
	if c.MaxSlice == 0 {
		c.MaxSlice = DefaultMaxSlice
	}
	if c.LeaseRetryDelay == 0 {
		c.LeaseRetryDelay = DefaultLeaseRetryDelay
	}
	if c.MaxQueueDelay == 0 {
		c.MaxQueueDelay = DefaultMaxQueueDelay
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.ReplaceAfter == 0 {
		c.ReplaceAfter = DefaultReplaceAfter
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.LogCacheBytes == 0 {
		c.LogCacheBytes = DefaultLogCacheBytes
	}
	if c.MaxInterruptions == 0 {
		c.MaxInterruptions = DefaultMaxInterruptions
	}
	if c.EncodeError == nil {
		c.EncodeError = defaultEncodeError
	}
	if c.HoldRetryDelay == 0 {
		c.HoldRetryDelay = DefaultHoldRetryDelay
	}
	if c.HoldRetryLimit == 0 {
		c.HoldRetryLimit = max(DefaultHoldRetryLimit, c.HoldRetryDelay)
	}
	if c.VersionRetryDelay == 0 {
		c.VersionRetryDelay = DefaultVersionRetryDelay
	}
	if c.VersionRetryLimit == 0 {
		c.VersionRetryLimit = max(DefaultVersionRetryLimit, c.VersionRetryDelay)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.World == nil {
		errs = append(errs, errors.New("no World"))
	}
	if c.Registry == nil {
		errs = append(errs, errors.New("no Registry"))
	}
	errs = append(errs, c.Options.check()...)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"RunPollInterval", c.RunPollInterval}, {"EventPollInterval", c.EventPollInterval}, {"BudgetMargin", c.BudgetMargin},
		{"MaxInvocation", c.MaxInvocation}, {"LeaseRetryDelay", c.LeaseRetryDelay}, {"MaxQueueDelay", c.MaxQueueDelay},
		{"BackgroundDelay", c.BackgroundDelay}, {"VersionRetryDelay", c.VersionRetryDelay}, {"VersionRetryLimit", c.VersionRetryLimit},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%s)", d.name, d.v))
		}
	}
	if c.VersionRetryLimit < c.VersionRetryDelay {
		errs = append(errs, fmt.Errorf("VersionRetryLimit (%s) is less than VersionRetryDelay (%s)", c.VersionRetryLimit, c.VersionRetryDelay))
	}
	if err := errors.Join(errs...); err != nil {
		return cfgerr.Invalid(fmt.Errorf("engine: invalid config: %w", err))
	}
	return nil
}

// check returns what is wrong with o (after its defaults), each error
// naming the public field (worker.Config.Engine's).
func (o Options) check() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Engine.RunLeaseTTL", o.RunLeaseTTL}, {"Engine.StepLeaseTTL", o.StepLeaseTTL}, {"Engine.MaxSlice", o.MaxSlice},
		{"Engine.HoldRetryDelay", o.HoldRetryDelay}, {"Engine.HoldRetryLimit", o.HoldRetryLimit},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%s)", d.name, d.v))
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"Engine.InlineConcurrency", o.InlineConcurrency}, {"Engine.MaxDeliveries", o.MaxDeliveries}, {"Engine.MaxInterruptions", o.MaxInterruptions}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%d)", n.name, n.v))
		}
	}
	if o.HoldRetryLimit < o.HoldRetryDelay {
		errs = append(errs, fmt.Errorf("%s (%s) is less than %s (%s)", "Engine.HoldRetryLimit", o.HoldRetryLimit, "Engine.HoldRetryDelay", o.HoldRetryDelay))
	}
	return errs
}

// DefaultBackoff is exponential: 1s before the first retry, doubling up to
// 5 minutes, with ±20% jitter.
func DefaultBackoff(retry int) time.Duration {
	return ExponentialBackoff(time.Second, 5*time.Minute)(retry)
}

// ExponentialBackoff returns a backoff starting at initial, doubling per
// retry up to limit, with ±20% jitter.
func ExponentialBackoff(initial, limit time.Duration) func(retry int) time.Duration {
	return func(retry int) time.Duration {
		d := initial
		for i := 1; i < retry && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		if d <= 0 {
			return 0
		}
		jitter := time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
		return max(0, d+jitter)
	}
}

func defaultEncodeError(err error) *world.ErrorData {
	return &world.ErrorData{Type: fmt.Sprintf("%T", err), Message: err.Error()}
}
