package knobs

import "time"

// Worker holds the knobs of the engine, the Worker, the Lambda handler and
// the client. Zero leaves a setting at the constructor's default (the
// defaults are the constants beside the code using each: internal/engine's
// Default*, internal/sdk's and handler's).
type Worker struct {
	// RunPollInterval is how often a running step checks whether its run
	// has ended, to cancel its context (engine).
	RunPollInterval time.Duration
	// EventPollInterval is how often an invocation waiting on long steps
	// looks for events other writers appended (engine).
	EventPollInterval time.Duration
	// Linger is how long an invocation waits in process for a close timer
	// (engine; negative: never).
	Linger time.Duration
	// MaxQueueDelay is the longest delay one queue message carries (engine;
	// skeinlambda sets it from SKEIN_MAX_QUEUE_DELAY).
	MaxQueueDelay time.Duration
	// BackgroundDelay delays the queue messages of the steps beyond the
	// inline capacity (engine; negative: none). The Worker sets 50ms.
	BackgroundDelay time.Duration
	// MaxInvocation bounds one invocation without a context deadline
	// (engine).
	MaxInvocation time.Duration
	// BudgetMargin is kept free before the context's deadline (engine; the
	// Lambda handler sets it from its TimeBudgetMargin).
	BudgetMargin time.Duration
	// VersionRetryDelay and VersionRetryLimit space the returns of a
	// message an executor does not accept (engine; skeinlambda sets them
	// from SKEIN_VERSION_RETRY_DELAY and SKEIN_VERSION_RETRY_LIMIT).
	VersionRetryDelay, VersionRetryLimit time.Duration

	// PollWait is how long a Worker's receive waits for a message.
	PollWait time.Duration
	// RetryDelay is the delay before a failed message is delivered again,
	// given its attempt (the Worker; the Lambda handler with a Queue).
	RetryDelay func(attempt int) time.Duration
	// ScheduleTick is the longest a Worker waits between two looks at the
	// clock for due schedules.
	ScheduleTick time.Duration

	// ResultPoll bounds the wait between two looks at a run awaited by
	// Client.Result.
	ResultPoll time.Duration

	// ReturnMargin: at the deadline less it the Lambda flow handler
	// cancels what still runs and returns.
	ReturnMargin time.Duration
	// MaxMalformedReceives bounds the receives of a malformed message
	// under the handler's DeadLetter policy.
	MaxMalformedReceives int
	// WebhookTimeout bounds a webhook request in the Lambda handler.
	WebhookTimeout time.Duration
}

// WithRunPollInterval sets Worker.RunPollInterval.
func WithRunPollInterval(d time.Duration) Option {
	return func(s *Set) { s.RunPollInterval = d }
}

// WithEventPollInterval sets Worker.EventPollInterval.
func WithEventPollInterval(d time.Duration) Option {
	return func(s *Set) { s.EventPollInterval = d }
}

// WithLinger sets Worker.Linger (negative: never linger).
func WithLinger(d time.Duration) Option { return func(s *Set) { s.Linger = d } }

// WithMaxQueueDelay sets Worker.MaxQueueDelay.
func WithMaxQueueDelay(d time.Duration) Option { return func(s *Set) { s.MaxQueueDelay = d } }

// WithBackgroundDelay sets Worker.BackgroundDelay (negative: none).
func WithBackgroundDelay(d time.Duration) Option {
	return func(s *Set) { s.BackgroundDelay = d }
}

// WithMaxInvocation sets Worker.MaxInvocation.
func WithMaxInvocation(d time.Duration) Option { return func(s *Set) { s.MaxInvocation = d } }

// WithBudgetMargin sets Worker.BudgetMargin.
func WithBudgetMargin(d time.Duration) Option { return func(s *Set) { s.BudgetMargin = d } }

// WithVersionRetry sets Worker.VersionRetryDelay and VersionRetryLimit (a
// zero one is left as it was).
func WithVersionRetry(delay, limit time.Duration) Option {
	return func(s *Set) {
		if delay != 0 {
			s.VersionRetryDelay = delay
		}
		if limit != 0 {
			s.VersionRetryLimit = limit
		}
	}
}

// WithPollWait sets Worker.PollWait.
func WithPollWait(d time.Duration) Option { return func(s *Set) { s.PollWait = d } }

// WithRetryDelay sets Worker.RetryDelay.
func WithRetryDelay(f func(attempt int) time.Duration) Option {
	return func(s *Set) { s.RetryDelay = f }
}

// WithScheduleTick sets Worker.ScheduleTick.
func WithScheduleTick(d time.Duration) Option { return func(s *Set) { s.ScheduleTick = d } }

// WithResultPoll sets Worker.ResultPoll.
func WithResultPoll(d time.Duration) Option { return func(s *Set) { s.ResultPoll = d } }

// WithReturnMargin sets Worker.ReturnMargin.
func WithReturnMargin(d time.Duration) Option { return func(s *Set) { s.ReturnMargin = d } }

// WithMaxMalformedReceives sets Worker.MaxMalformedReceives.
func WithMaxMalformedReceives(n int) Option {
	return func(s *Set) { s.MaxMalformedReceives = n }
}

// WithWebhookTimeout sets Worker.WebhookTimeout.
func WithWebhookTimeout(d time.Duration) Option { return func(s *Set) { s.WebhookTimeout = d } }
