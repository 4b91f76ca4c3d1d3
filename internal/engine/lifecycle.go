package engine

// Run lifecycle logs and metrics: what a commit changed, told to the
// logger and to the Metrics sink once it is durable (never before: a log
// line or a metric follows committed state, so a refused or retried commit
// tells nothing twice).

import (
	"context"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/world"
)

// Metrics receives measurements of runs and steps, each once its event is
// committed (worker.Metrics is this type). Implementations must be safe for
// concurrent use and must not block. The names it receives: the counters
// RunsStarted (a run began, or a held run resumed), RunsCompleted,
// RunsFailed, RunsHeld (a replay divergence stopped a run), StepAttempts
// (an attempt began), StepAttemptFailures (an attempt failed, retried or
// not), StepsFailed (a step failed for good), MessagesRefused (messages an
// executor pinned to versions sent back for another executor: steadily
// above zero, runs wait for a version no one runs) and KeyUnavailable
// (messages sent back because the executor's keys could not open their
// run's payloads); the distributions StepLatency (a step's first start to
// its completion), RunDuration (a run's creation to its end) and, from the
// Lambda handler, QueueLag (a queue message's due time to its receipt).
type Metrics interface {
	// Count adds n to the counter name.
	Count(name string, n int)
	// Duration records one observation of the distribution name.
	Duration(name string, d time.Duration)
}

// Metric names.
const (
	MetricRunsStarted         = "RunsStarted"
	MetricRunsCompleted       = "RunsCompleted"
	MetricRunsFailed          = "RunsFailed"
	MetricRunsHeld            = "RunsHeld"
	MetricStepAttempts        = "StepAttempts"
	MetricStepAttemptFailures = "StepAttemptFailures"
	MetricStepsFailed         = "StepsFailed"
	MetricStepLatency         = "StepLatency"
	MetricRunDuration         = "RunDuration"
	MetricQueueLag            = "QueueLag"
	// MetricMessagesRefused counts the messages an engine pinned to code
	// versions sent back to the queue for another executor (version.go).
	MetricMessagesRefused = "MessagesRefused"
	// MetricKeyUnavailable counts the messages an engine sent back to the
	// queue because it could not open their run's payloads (a missing or
	// wrong encryption key: version.go, refuseKey).
	MetricKeyUnavailable = "KeyUnavailable"
)

// ObserveCommit logs the lifecycle events res committed and counts them in
// m (nil: none). The engine calls it after each of its commits; the SDK's
// client after its own (run creation, cancellation, holds it resolves).
func ObserveCommit(ctx context.Context, log *slog.Logger, m Metrics, res *world.AppendResult) {
	if res == nil || res.Run == nil {
		return
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	run := res.Run
	for _, r := range res.Results {
		if r.Event == nil {
			continue // satisfied without appending: told when it was
		}
		observeEvent(ctx, log, m, run, r)
	}
}

func observeEvent(ctx context.Context, log *slog.Logger, m Metrics, run *world.Run, r world.EventResult) {
	count := func(name string) {
		if m != nil {
			m.Count(name, 1)
		}
	}
	// The attributes are made only for a message the logger takes: a
	// step's start and completion are at Debug, which a production
	// logger drops, and they come at every step.
	runAttrs := func() []slog.Attr {
		return []slog.Attr{slog.String("run", run.RunID), slog.String("workflow", run.WorkflowName)}
	}
	stepAttrs := func() []slog.Attr {
		a := append(runAttrs(), slog.String("stepId", r.Event.CorrelationID))
		if r.Step != nil {
			a = append(a, slog.String("step", r.Step.StepName), slog.Int("attempt", r.Step.Attempt-r.Step.Interrupted))
		}
		return a
	}
	switch d := r.Event.Data.(type) {
	case *world.RunStarted:
		if run.StartedAt.Before(r.Event.CreatedAt) {
			// A held run released: it started before, and was told then.
			log.LogAttrs(ctx, slog.LevelInfo, "run released", runAttrs()...)
			return
		}
		count(MetricRunsStarted)
		log.LogAttrs(ctx, slog.LevelInfo, "run started", runAttrs()...)
	case *world.RunCompleted:
		count(MetricRunsCompleted)
		observeRunDuration(m, run)
		log.LogAttrs(ctx, slog.LevelInfo, "run completed", append(runAttrs(), runDuration(run)...)...)
	case *world.RunFailed:
		count(MetricRunsFailed)
		observeRunDuration(m, run)
		log.LogAttrs(ctx, slog.LevelWarn, "run failed", append(runAttrs(), append(runDuration(run),
			slog.String("code", d.ErrorCode), slog.String("error", errorMessage(d.Error)))...)...)
	case *world.RunCancelled:
		log.LogAttrs(ctx, slog.LevelInfo, "run cancelled", append(runAttrs(), slog.String("reason", d.Reason))...)
	case *world.RunHeld:
		count(MetricRunsHeld)
		log.LogAttrs(ctx, slog.LevelWarn, "run held", append(runAttrs(), slog.String("error", errorMessage(d.Error)),
			slog.Int("attempt", d.Attempt), slog.Time("retryAt", d.RetryAt))...)
	case *world.StepStarted:
		count(MetricStepAttempts)
		if log.Enabled(ctx, slog.LevelDebug) {
			log.LogAttrs(ctx, slog.LevelDebug, "step started", stepAttrs()...)
		}
	case *world.StepCompleted:
		if r.Step != nil && m != nil && !r.Step.StartedAt.IsZero() {
			m.Duration(MetricStepLatency, r.Event.CreatedAt.Sub(r.Step.StartedAt))
		}
		if log.Enabled(ctx, slog.LevelDebug) {
			log.LogAttrs(ctx, slog.LevelDebug, "step completed", stepAttrs()...)
		}
	case *world.StepRetrying:
		count(MetricStepAttemptFailures)
		log.LogAttrs(ctx, slog.LevelWarn, "step retrying", append(stepAttrs(),
			slog.String("error", errorMessage(d.Error)), slog.Time("retryAfter", d.RetryAfter))...)
	case *world.StepFailed:
		count(MetricStepAttemptFailures)
		count(MetricStepsFailed)
		log.LogAttrs(ctx, slog.LevelWarn, "step failed", append(stepAttrs(), slog.String("error", errorMessage(d.Error)))...)
	}
}

func runDuration(run *world.Run) []slog.Attr {
	if run.CompletedAt.IsZero() {
		return nil
	}
	return []slog.Attr{slog.Int64("durationMs", run.CompletedAt.Sub(run.CreatedAt).Milliseconds())}
}

func observeRunDuration(m Metrics, run *world.Run) {
	if m != nil && !run.CompletedAt.IsZero() {
		m.Duration(MetricRunDuration, run.CompletedAt.Sub(run.CreatedAt))
	}
}

// errorMessage is a recorded error's message with its code, if any.
func errorMessage(d *world.ErrorData) string {
	switch {
	case d == nil:
		return ""
	case d.Code != "":
		return d.Code + ": " + d.Message
	}
	return d.Message
}
