package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

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
}

// event returns the event recording the outcome.
func (o outcome) event() world.EventInput {
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
	Attempt          int
	StartedAt        time.Time
	World            world.World
	Now              func() time.Time
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
)

// runStep executes one attempt and decides what to record.
func (e *Engine) runStep(ctx context.Context, x stepExec) outcome {
	out := outcome{stepID: x.stepID, stepName: x.stepName, attempt: x.attempt}
	def, ok := e.reg.Step(x.stepName)
	if !ok {
		out.kind = outFailed
		out.failure = &world.ErrorData{Type: TypeStepNotRegistered, Message: fmt.Sprintf(stepNotRegisteredFmt, x.stepName), Fatal: true}
		return out
	}
	attempt := x.retryAttempt()
	if refused := e.refuseAttempt(x, def); refused != nil {
		out.kind, out.failure = outFailed, refused
		return out
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sctx = context.WithValue(sctx, stepInfoKey{}, &StepInfo{
		RunID: x.run.runID, WorkflowName: x.run.workflowName, RunCreatedAt: x.run.createdAt,
		ExecutionContext: x.run.execCtx, StepID: x.stepID, StepName: x.stepName,
		Attempt: attempt, StartedAt: x.startedAt, World: e.w, Now: e.cfg.Now,
	})
	if e.cfg.StepContext != nil {
		sctx = e.cfg.StepContext(sctx)
	}
	stop := e.watchStep(sctx, cancel, x)
	result, err := callStep(def.Fn, sctx, x.input)
	stop()
	if err == nil {
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		out.kind, out.result = outCompleted, result
		return out
	}
	if ctx.Err() != nil {
		out.kind = outAbandoned
		return out
	}
	if cause := context.Cause(sctx); errors.Is(cause, errRunEnded) || errors.Is(cause, errLeaseLost) {
		out.kind = outAbandoned
		return out
	}
	return e.attemptFailed(out, x, def, attempt, err)
}

// refuseAttempt returns why attempt x of step def must fail without
// running: its executor was lost too often, or it is past the step's
// attempts (only when the step's MaxRetries shrank since it last retried).
// Nil when it may run.
func (e *Engine) refuseAttempt(x stepExec, def *Step) *world.ErrorData {
	maxAttempts := max(def.MaxRetries, 0) + 1
	if x.interrupted > e.cfg.MaxInterruptions {
		return &world.ErrorData{
			Type: TypeExecutorLost,
			Code: world.CodeStepExecutorLost,
			Message: fmt.Sprintf("step %q lost its executor %d times, more than the %d allowed: the process running it died "+
				"or was cut off (killed, out of memory, past its time limit) before it recorded an outcome", x.stepName, x.interrupted, e.cfg.MaxInterruptions),
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
func (e *Engine) attemptFailed(out outcome, x stepExec, def *Step, attempt int, err error) outcome {
	var data *world.ErrorData
	fatal := false
	var retryAt time.Time
	var f *Failure
	if errors.As(err, &f) && f.Data != nil {
		data, fatal, retryAt = f.Data, f.Fatal, f.RetryAt
	} else {
		data = e.cfg.EncodeError(err)
	}
	if data.Fatal {
		fatal = true
	}
	maxAttempts := max(def.MaxRetries, 0) + 1
	if data.Type == TypePanic {
		e.logStepPanic(x, attempt, !fatal && attempt < maxAttempts, data)
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
		retryAt = e.now().Add(backoff(attempt))
	}
	out.kind, out.failure, out.retryAfter = outRetrying, data, retryAt
	return out
}

// workflowFailCode is the error code of a run whose workflow returned the
// error d: world.CodeStepExecutorLost when d is, or wraps, the failure of a
// step that lost its executor too often (that is no error of the user's
// code), world.CodeHookPayloadInvalid when it is, or wraps, a hook payload
// that did not decode, otherwise world.CodeUserError.
func workflowFailCode(d *world.ErrorData) string {
	for ; d != nil; d = d.Cause {
		if d.Code == world.CodeStepExecutorLost || d.Code == world.CodeHookPayloadInvalid {
			return d.Code
		}
	}
	return world.CodeUserError
}

// logStepPanic logs a step attempt that panicked. Steps do not replay: the
// attempt ran once, and is logged once.
func (e *Engine) logStepPanic(x stepExec, attempt int, retried bool, data *world.ErrorData) {
	e.log.Error("engine: step panicked", "run", x.run.runID, "workflow", x.run.workflowName, "step", x.stepName,
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

// watchStep renews the attempt's execution lease every third of its TTL and
// cancels the step's context when its run ends or the lease is lost. It
// uses no goroutine until the first tick, so short steps cost a timer.
func (e *Engine) watchStep(ctx context.Context, cancel context.CancelCauseFunc, x stepExec) (stop func()) {
	renewEvery := max(e.cfg.StepLeaseTTL/3, time.Millisecond)
	interval := min(renewEvery, e.cfg.RunPollInterval)
	var (
		mu        sync.Mutex
		stopped   bool
		timer     *time.Timer
		running   sync.WaitGroup
		lastRenew = e.now()
	)
	var tick func()
	tick = func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		if now := e.now(); now.Sub(lastRenew) >= renewEvery {
			lastRenew = now
			_, err := e.w.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: x.run.runID, StepID: x.stepID, Attempt: x.attempt, TTL: e.cfg.StepLeaseTTL})
			if err != nil && (errors.Is(err, world.ErrConflict) || errors.Is(err, world.ErrNotFound)) {
				cancel(errLeaseLost)
				return
			}
		}
		run, err := e.w.GetRun(ctx, &world.GetRunParams{RunID: x.run.runID})
		if err == nil && run.Status.Terminal() {
			cancel(errRunEnded)
			return
		}
		mu.Lock()
		if !stopped {
			timer = time.AfterFunc(interval, tick)
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(interval, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		running.Wait()
	}
}

// executeBackground executes the steps a message names (steps queued
// because the invocation that created them had no inline capacity, or a
// retry), records their outcomes and takes their run on (wakeAfterStep). A
// message naming several is executed as a group (executeGroup).
func (e *Engine) executeBackground(ctx context.Context, msg world.Message) error {
	ids := msg.Steps()
	if len(ids) > 1 {
		return e.executeGroup(ctx, msg.RunID, ids)
	}
	key, err := e.executeStep(ctx, msg.RunID, ids[0])
	if err != nil || key == "" {
		return err
	}
	return e.wakeAfterStep(ctx, msg.RunID, key)
}

// executeStep executes one background step and records its outcome. It
// returns the idempotency key of the continuation the outcome needs (empty
// when none: the step was already finished or is owned elsewhere, the run
// ended, or the step retries, for which it enqueues the step again).
func (e *Engine) executeStep(ctx context.Context, runID, stepID string) (string, error) {
	st, err := e.w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil {
		if errors.Is(err, world.ErrNotFound) {
			return "", &PermanentError{Reason: fmt.Sprintf("step %s of run %s not found", stepID, runID), Err: err}
		}
		return "", err
	}
	if st.Status.Terminal() {
		// Recorded already: by this message's first delivery, whose
		// executor may have died before it woke the run, or by another
		// executor. Waking the run again is harmless; not waking it could
		// leave the run waiting for good.
		return keyDone(stepID, st.Attempt), nil
	}
	run, err := e.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return "", err
	}
	if run.Status.Terminal() {
		return "", nil
	}
	res, err := e.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{CorrelationID: stepID, Data: &world.StepStarted{StepName: st.StepName, LeaseTTL: e.cfg.StepLeaseTTL, Queued: true}},
	}})
	if err != nil {
		switch requeued, rerr := e.requeueRefusedStart(ctx, runID, stepID, err); {
		case requeued:
			return "", rerr
		case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrGone):
			return "", nil // the step has ended, or the run has
		case errors.Is(err, world.ErrNotFound):
			return "", &PermanentError{Reason: "step " + stepID + " not found", Err: err}
		}
		return "", err
	}
	meta := runMeta{
		runID: run.RunID, workflowName: run.WorkflowName, input: run.Input,
		execCtx: run.ExecutionContext, createdAt: run.CreatedAt,
	}
	x := execOf(meta, res.Results[0].Step, st.Input)
	o := e.runStep(ctx, x)
	if o.kind == outAbandoned {
		return "", ctx.Err()
	}
	if err := e.record(ctx, runID, o); err != nil {
		return "", err
	}
	if o.kind == outRetrying {
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: o.retryAfter}
		return "", e.enqueue(ctx, m, keyStep(stepID, o.attempt))
	}
	return keyDone(stepID, o.attempt), nil
}

// requeueRefusedStart queues a background step again when its step_started
// was refused for now: not yet due (a retry's time), or running under the
// live lease of a queued attempt. That lease may be held by an executor
// that is still running the step (a duplicate delivery), whose outcome
// will make the new message find the step ended, or by one that died: this
// delivery is then the one that runs the step again, so it must not be
// dropped (nobody watches a queued attempt's lease, see schedule.next).
// An attempt an invocation runs inline needs nothing from it. It reports
// whether err was such a refusal.
func (e *Engine) requeueRefusedStart(ctx context.Context, runID, stepID string, err error) (bool, error) {
	var early *world.TooEarlyError
	var leased *world.StepLeasedError
	switch {
	case errors.As(err, &early):
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: early.RetryAfter}
		return true, e.enqueue(ctx, m, keyStepEarly(stepID, early.RetryAfter))
	case errors.As(err, &leased):
		if !e.queuedAttempt(ctx, runID, stepID, leased.Attempt) {
			// An invocation runs it inline: should it die, its run's
			// next session takes the step on at the lease's expiry.
			return true, nil
		}
		at := leased.LeaseExpiresAt.Add(expirySlack)
		m := world.Message{RunID: runID, StepID: stepID, NotBefore: at}
		return true, e.enqueue(ctx, m, keyStepLeased(stepID, leased.Attempt, leased.LeaseExpiresAt))
	}
	return false, nil
}

// queuedAttempt reports whether a step's attempt was started by a
// background executor (world.StepStarted.Queued), from the step's events;
// when they cannot be read, it answers yes, the safe side.
func (e *Engine) queuedAttempt(ctx context.Context, runID, stepID string, attempt int) bool {
	page, err := e.w.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{
		RunID: runID, CorrelationID: stepID, Pagination: world.Pagination{Limit: world.MaxPageLimit},
	})
	if err != nil {
		return true
	}
	for _, ev := range page.Items {
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Attempt == attempt {
			return d.Queued
		}
	}
	return true
}

// wakeAfterStep takes a run on after a background step's outcome has
// committed. If the run lease is held, its holder reads the log after
// releasing it and goes on itself if anything arrived (see
// session.afterRelease for why one of the two always does). Otherwise this
// executor takes the lease and continues the run in its own invocation,
// which then needs no message; only when its budget is spent does it
// enqueue a continuation (under key).
func (e *Engine) wakeAfterStep(ctx context.Context, runID, key string) error {
	owner, err := e.acquireRunLease(ctx, runID)
	switch {
	case errors.Is(err, world.ErrLeaseHeld):
		return nil // the holder goes on after releasing the lease
	case err == nil:
		if deadline := e.budget(ctx); e.now().Before(deadline) {
			return e.continueLeased(ctx, runID, owner, deadline)
		}
		_ = e.releaseRunLease(ctx, runID, owner) // logged; the continuation below goes on
	}
	// Out of budget, or the lease is in an unknown state (an error): a
	// continuation wakes the run.
	return e.enqueue(ctx, world.Message{RunID: runID}, key)
}

// record appends a step outcome outside the run's fence. A refusal means the
// step or its run has moved on (another executor recorded it after this
// one's lease expired, or the run ended): nothing to do.
func (e *Engine) record(ctx context.Context, runID string, o outcome) error {
	var err error
	for try := 0; try < 3; try++ {
		_, err = e.w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{o.event()}})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrGone), errors.Is(err, world.ErrNotFound):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		time.Sleep(time.Duration(try+1) * recordBackoff)
	}
	return err
}
