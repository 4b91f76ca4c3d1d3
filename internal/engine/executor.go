package engine

// Running one step attempt, wherever it runs (inline, in the background,
// in a group): runStep calls the step's function under its lease
// (watchStep) and decides what the attempt records (its outcome).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/internal/renew"
	"github.com/skeinflow/skein/world"
)

type outcomeKind uint8

const (
	outCompleted outcomeKind = iota + 1
	outFailed
	outRetrying
	outAbandoned // nothing to record: the invocation or the attempt was cut off
)

// outcome is the result of one step attempt.
type outcome struct {
	stepID     string
	stepName   string
	kind       outcomeKind
	attempt    int
	result     json.RawMessage
	failure    *world.ErrorData
	retryAfter time.Time
	// comp: the outcome of an attempt of step stepID's compensation,
	// recorded by a comp_* event.
	comp bool
}

// event returns the event recording the outcome.
func (o outcome) event() world.EventInput {
	if o.comp {
		return o.compEvent()
	}
	switch o.kind {
	case outCompleted:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.StepCompleted{StepName: o.stepName, Result: o.result}}
	case outFailed:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.StepFailed{StepName: o.stepName, Error: o.failure}}
	default:
		return world.EventInput{CorrelationID: o.stepID, Data: &world.StepRetrying{StepName: o.stepName, Error: o.failure, RetryAfter: o.retryAfter}}
	}
}

// stepExec describes one step attempt to execute.
type stepExec struct {
	run      runMeta
	stepID   string
	stepName string
	input    json.RawMessage
	// attempt counts the step's starts (world.Step.Attempt), interrupted
	// ones included: it names the attempt's lease. interrupted counts the
	// starts whose executor was lost (world.Step.Interrupted).
	attempt     int
	interrupted int
	startedAt   time.Time
	// inline: the attempt runs in the session that started it (its span is
	// the session's child; see startStepSpan).
	inline bool
	// origin is the remote parent of a background attempt's span
	// (tracing.runParent), when its executor computed it for several
	// attempts at once; invalid (zero): startStepSpan computes it.
	origin trace.SpanContext
	// comp: the attempt is of step stepID's compensation, the step
	// stepName; its lease is the compensation's, and its run's end does not
	// cancel it (see compensate.go).
	comp bool
}

// execOf describes the attempt a step_started began, from the step as it
// committed.
func execOf(run runMeta, st *world.Step, input json.RawMessage) stepExec {
	return stepExec{
		run: run, stepID: st.StepID, stepName: st.StepName, input: input,
		attempt: st.Attempt, interrupted: st.Interrupted, startedAt: st.StartedAt,
	}
}

// retryAttempt is the attempt as the step's retry policy counts it (1 for
// the first, 2 for the first retry): its starts less those whose executor
// was lost, which repeat the attempt they interrupted.
func (x stepExec) retryAttempt() int { return max(x.attempt-x.interrupted, 1) }

// StepInfo describes the step attempt a context belongs to; the SDK reads it
// for step metadata, streams and child runs. Attempt is the attempt as the
// step's retry policy counts it: 1 for the first, 2 for the first retry; an
// attempt whose executor was lost runs again under the same number (see
// Config.MaxInterruptions).
type StepInfo struct {
	RunID            string
	WorkflowName     string
	RunCreatedAt     time.Time
	ExecutionContext json.RawMessage
	StepID           string
	StepName         string
	// Compensating is set when the attempt is of a compensation: StepName
	// names the compensation step, StepID the step it compensates.
	Compensating bool
	Attempt      int
	StartedAt    time.Time
	World        world.World
	Now          func() time.Time
}

type stepInfoKey struct{}

// StepInfoFrom returns the step attempt ctx belongs to.
func StepInfoFrom(ctx context.Context) (*StepInfo, bool) {
	info, ok := ctx.Value(stepInfoKey{}).(*StepInfo)
	return info, ok
}

// stepCancel is why a step's context was cancelled by its watcher.
type stepCancel string

func (c stepCancel) Error() string { return string(c) }

const (
	errRunEnded  stepCancel = "engine: the step's run has ended"
	errLeaseLost stepCancel = "engine: the step's execution lease was lost"
	// errStepTimeout cancels an attempt that ran past its Step.Timeout.
	errStepTimeout stepCancel = "engine: the step attempt ran past its timeout"
)

// stepRunner runs one step attempt: it renews the attempt's lease while
// the step runs, and turns what the step returned into the outcome to
// record (completed, retrying, failed or abandoned). A session commits its
// inline steps' outcomes with its own events; stepRunner records those
// run outside a session (record, recordFinal in background.go: a
// background step's, a step's after its run's end).
type stepRunner struct {
	*port
	spans *tracing
}

// runStep executes one attempt and decides what to record.
func (r *stepRunner) runStep(ctx context.Context, x stepExec) (out outcome) {
	ctx, span := r.spans.startStepSpan(ctx, x, x.inline)
	defer func() { endStepSpan(span, out) }()
	out = outcome{stepID: x.stepID, stepName: x.stepName, attempt: x.attempt, comp: x.comp}
	def, ok := r.reg.Step(x.stepName)
	if !ok {
		out.kind = outFailed
		out.failure = &world.ErrorData{Type: TypeStepNotRegistered, Message: fmt.Sprintf(stepNotRegisteredFmt, x.stepName), Fatal: true}
		return out
	}
	attempt := x.retryAttempt()
	if refused := r.refuseAttempt(x, def); refused != nil {
		out.kind, out.failure = outFailed, refused
		return out
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sctx = context.WithValue(sctx, stepInfoKey{}, &StepInfo{
		RunID: x.run.runID, WorkflowName: x.run.workflowName, RunCreatedAt: x.run.createdAt,
		ExecutionContext: x.run.execCtx, StepID: x.stepID, StepName: x.stepName, Compensating: x.comp,
		Attempt: attempt, StartedAt: x.startedAt, World: r.w, Now: r.cfg.Now,
	})
	if r.cfg.StepContext != nil {
		sctx = r.cfg.StepContext(sctx)
	}
	stop := r.watchStep(sctx, cancel, x)
	result, err, timedOut := callStepWithin(def, sctx, x.input)
	stop()
	if timedOut {
		err = &Failure{Data: timeoutData(x, def, attempt, err)}
	}
	if err == nil {
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		if len(result) > r.lim.MaxPayload {
			out.kind, out.failure = outFailed, r.oversizedResult(x, len(result))
			return out
		}
		out.kind, out.result = outCompleted, result
		return out
	}
	if ctx.Err() != nil {
		out.kind = outAbandoned
		return out
	}
	if cause := context.Cause(sctx); errors.Is(cause, errRunEnded) {
		// Its run was cancelled: the attempt's end is recorded for the log
		// (a finished run accepts the outcome of a running step).
		out.kind, out.failure = outFailed, cancelledData(x)
		return out
	}
	if cause := context.Cause(sctx); errors.Is(cause, errLeaseLost) {
		out.kind = outAbandoned
		return out
	}
	return r.attemptFailed(out, x, def, attempt, err)
}

// refuseAttempt returns why attempt x of step def must fail without
// running: its executor was lost too often, or it is past the step's
// attempts (only when the step's MaxRetries shrank since it last retried).
// Nil when it may run.
func (r *stepRunner) refuseAttempt(x stepExec, def *Step) *world.ErrorData {
	maxAttempts := max(def.MaxRetries, 0) + 1
	if x.interrupted > r.cfg.MaxInterruptions {
		return &world.ErrorData{
			Type: TypeExecutorLost,
			Code: world.CodeStepExecutorLost,
			Message: fmt.Sprintf("step %q lost its executor %d times, more than the %d allowed: the process running it died "+
				"or was cut off (killed, out of memory, past its time limit) before it recorded an outcome", x.stepName, x.interrupted, r.cfg.MaxInterruptions),
			Fatal: true,
		}
	}
	if attempt := x.retryAttempt(); attempt > maxAttempts {
		return &world.ErrorData{
			Type:    TypeAttemptsExhausted,
			Message: fmt.Sprintf("step %q is at attempt %d, more than its %d attempts", x.stepName, attempt, maxAttempts),
			Fatal:   true,
		}
	}
	return nil
}

// attemptFailed decides what a failed attempt records: the step's failure
// when the error is fatal or the attempts are spent, otherwise its retry at
// the time the error asks for or after the step's backoff. A panic is
// logged, once: steps do not replay.
func (r *stepRunner) attemptFailed(out outcome, x stepExec, def *Step, attempt int, err error) outcome {
	var data *world.ErrorData
	fatal := false
	var retryAt time.Time
	var f *Failure
	if errors.As(err, &f) && f.Data != nil {
		data, fatal, retryAt = f.Data, f.Fatal, f.RetryAt
	} else {
		data = r.cfg.EncodeError(err)
	}
	if data.Fatal {
		fatal = true
	}
	data = fitError(data, r.lim.MaxPayload)
	maxAttempts := max(def.MaxRetries, 0) + 1
	if data.Type == TypePanic {
		r.logStepPanic(x, attempt, !fatal && attempt < maxAttempts, data)
	}
	if fatal || attempt >= maxAttempts {
		out.kind, out.failure = outFailed, data
		return out
	}
	if retryAt.IsZero() {
		backoff := def.Backoff
		if backoff == nil {
			backoff = DefaultBackoff
		}
		retryAt = r.now().Add(backoff(attempt))
	}
	out.kind, out.failure, out.retryAfter = outRetrying, data, retryAt
	return out
}

// workflowFailCode is the error code of a run whose workflow returned the
// error d: world.CodeStepExecutorLost when d is, or wraps, the failure of a
// step that lost its executor too often (that is no error of the user's
// code), world.CodeHookPayloadInvalid when it is, or wraps, a hook payload
// that did not decode, world.CodeStepTimeout when a step's last attempt ran
// past its timeout, the limit's code (world.CodeLimitExceeded,
// world.CodeMaxEventsExceeded) when it is, or wraps, a refusal by one of
// the run's limits (a step's result over the payload limit, a stream write
// over its bound), otherwise world.CodeUserError.
func workflowFailCode(d *world.ErrorData) string {
	for ; d != nil; d = d.Cause {
		switch d.Code {
		case world.CodeStepExecutorLost, world.CodeHookPayloadInvalid, world.CodeStepTimeout,
			world.CodeLimitExceeded, world.CodeMaxEventsExceeded:
			return d.Code
		}
	}
	return world.CodeUserError
}

// logStepPanic logs a step attempt that panicked. Steps do not replay: the
// attempt ran once, and is logged once.
func (r *stepRunner) logStepPanic(x stepExec, attempt int, retried bool, data *world.ErrorData) {
	r.log.Error("engine: step panicked", "run", x.run.runID, "workflow", x.run.workflowName, "step", x.stepName,
		"stepId", x.stepID, "attempt", attempt, "retried", retried, "panic", data.Message, "stack", data.Stack)
}

func callStep(fn func(context.Context, json.RawMessage) (json.RawMessage, error), ctx context.Context, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			out = nil
			err = &Failure{Data: &world.ErrorData{
				Type:    TypePanic,
				Message: fmt.Sprintf("step panicked: %v", r),
				Stack:   string(debug.Stack()),
			}}
		}
	}()
	return fn(ctx, input)
}

// callStepWithin calls the step's function under its per-attempt timeout,
// if it has one. timedOut reports that the timeout passed before the
// function returned: the attempt has failed, whatever the function returns
// after that (a result returned late is discarded, an error becomes the
// timeout's cause). A function that does not return within
// stepTimeoutGrace of its context's cancellation is left running on its
// own.
func callStepWithin(def *Step, ctx context.Context, input json.RawMessage) (out json.RawMessage, err error, timedOut bool) {
	if def.Timeout <= 0 {
		out, err = callStep(def.Fn, ctx, input)
		return out, err, false
	}
	tctx, cancel := context.WithTimeoutCause(ctx, def.Timeout, errStepTimeout)
	defer cancel()
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, e := callStep(def.Fn, tctx, input)
		done <- result{o, e}
	}()
	select {
	case r := <-done:
		if errors.Is(context.Cause(tctx), errStepTimeout) {
			return nil, r.err, true // it returned as the deadline passed
		}
		return r.out, r.err, false
	case <-tctx.Done():
	}
	if !errors.Is(context.Cause(tctx), errStepTimeout) {
		r := <-done // cancelled for another reason: the watcher's cause decides
		return r.out, r.err, false
	}
	grace := time.NewTimer(stepTimeoutGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return nil, r.err, true
	case <-grace.C:
		return nil, nil, true
	}
}

// timeoutData records attempt x of step def as timed out; cause is what the
// function returned, if it returned.
func timeoutData(x stepExec, def *Step, attempt int, cause error) *world.ErrorData {
	d := &world.ErrorData{
		Type:    TypeStepTimeout,
		Code:    world.CodeStepTimeout,
		Message: fmt.Sprintf("step %q attempt %d timed out after %s", x.stepName, attempt, def.Timeout),
		Details: timeoutDetails(x.stepName, attempt, def.Timeout),
	}
	var f *Failure
	switch {
	case errors.As(cause, &f) && f.Data != nil:
		d.Cause = f.Data
	case cause != nil:
		d.Cause = &world.ErrorData{Type: fmt.Sprintf("%T", cause), Message: cause.Error()}
	}
	return d
}

// timeoutDetails is the Details of a StepTimeoutError as the SDK decodes it.
func timeoutDetails(step string, attempt int, timeout time.Duration) json.RawMessage {
	b, _ := json.Marshal(struct {
		Step    string        `json:"step"`
		Attempt int           `json:"attempt"`
		Timeout time.Duration `json:"timeout"`
	}{step, attempt, timeout})
	return b
}

// watchStep renews the attempt's execution lease every third of its TTL and
// cancels the step's context when its run is cancelled or the lease is
// lost. A run that completes or fails lets the attempt run on (it records
// its outcome for the log, see rest.go); the watcher then stops reading the
// run and only renews. A compensation's attempt renews the compensation's
// lease and never reads the run: no end of its run cancels it. It uses no
// goroutine between its ticks (renew.Every), so short steps cost a timer.
func (r *stepRunner) watchStep(ctx context.Context, cancel context.CancelCauseFunc, x stepExec) (stop func()) {
	renewEvery := max(r.cfg.StepLeaseTTL/3, time.Millisecond)
	lastRenew := r.now()
	ended := x.comp // the run completed or failed (or x is a compensation): no reads of it
	return renew.Every(ctx, min(renewEvery, r.cfg.RunPollInterval), func() bool {
		if now := r.now(); now.Sub(lastRenew) >= renewEvery {
			lastRenew = now
			_, err := r.w.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: x.run.runID, StepID: x.stepID, Attempt: x.attempt, TTL: r.cfg.StepLeaseTTL, Compensation: x.comp})
			if err != nil && (errors.Is(err, world.ErrConflict) || errors.Is(err, world.ErrNotFound)) {
				cancel(errLeaseLost)
				return false
			}
		}
		if !ended {
			run, err := r.w.GetRun(ctx, &world.GetRunParams{RunID: x.run.runID})
			if err == nil && run.Status == world.RunStatusCancelled {
				cancel(errRunEnded)
				return false
			}
			ended = err == nil && run.Status.Terminal()
		}
		return true
	})
}
