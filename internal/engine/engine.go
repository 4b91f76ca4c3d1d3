package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
	"go.opentelemetry.io/otel/codes"
)

// Engine handles queue messages for any World. It is safe for concurrent
// use: a consumer may call Handle from many goroutines.
type Engine struct {
	*parts             // the parts below a session, the port among them
	gate   *gate       // whether this executor takes the message (version.go)
	leases *runLeases  // who holds a run, under which its sessions run (runlease.go)
	bg     *background // a message naming steps (background.go)
}

// parts are the engine's parts a session calls, all below it: the port
// (World, config, clock), the tracing of its span, the step runner of
// its inline steps, and the rest after its run's end (with the
// compensator). runLeases and the Engine's background path call them
// too. Their methods here are what a session does to its run from
// outside its commits: a hold's retry (hold.go), a misused API's failure
// (guard.go).
type parts struct {
	*port
	spans *tracing
	steps *stepRunner
	comps *compensator
	rest  *rest
}

// New returns an Engine for cfg.
func New(cfg Config, opts ...knobs.Option) (*Engine, error) {
	cfg = cfg.withKnobs(opts...).withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	entropy := cfg.Entropy
	if entropy == nil {
		entropy = rand.Reader
	}
	var b [6]byte
	if _, err := io.ReadFull(entropy, b[:]); err != nil {
		return nil, fmt.Errorf("engine: owner ID: %w", err)
	}
	pt := &port{cfg: cfg, w: cfg.World, reg: cfg.Registry, log: cfg.Logger, lim: runrules.LimitsOf(cfg.World),
		logs: newLogCache(cfg.LogCacheBytes), recent: newRecentAppends(), known: newKnownSteps()}
	spans := &tracing{port: pt}
	steps := &stepRunner{pt, spans}
	comps := &compensator{pt, steps}
	below := &parts{port: pt, spans: spans, steps: steps, comps: comps, rest: &rest{pt, steps, comps}}
	leases := &runLeases{parts: below, id: "eng-" + hex.EncodeToString(b[:])}
	return &Engine{parts: below, gate: &gate{port: pt}, leases: leases, bg: &background{parts: below, leases: leases}}, nil
}

// Close stops the workflows the engine keeps suspended in memory between
// their runs' continuations (a goroutine each, see Config.LogCacheBytes)
// and keeps none from then on: the engine still handles messages, each
// session replaying its run's workflow from its log. Call it once done
// with the engine.
func (e *Engine) Close() { e.logs.close() }

// Config returns the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// Handle processes one message: nil means acknowledge it; a *PermanentError
// means it can never succeed (acknowledge and report it); any other error
// means retry it later.
func (e *Engine) Handle(ctx context.Context, msg world.Message) error {
	return e.HandleDelivery(ctx, msg, 0)
}

// HandleDelivery is Handle for a message delivered for the attempt-th time
// (1-based; 0 when unknown). A message delivered more than
// Config.MaxDeliveries times fails its run with MAX_DELIVERIES_EXCEEDED.
// A message whose run's payloads the World cannot open for want of the
// right key (world.ErrKeyUnavailable) is sent back to the queue as a new
// message and acknowledged, like one of a version this engine does not
// run: a key being fixed never fails a run. Such an executor counts no
// delivery: at a count limit (MaxDeliveries, ReplaceAfter) it checks the
// key first, and refuses rather than fails or replaces the message, so
// its receives of the message (however it was stopped) are dropped with
// the message it refuses.
func (e *Engine) HandleDelivery(ctx context.Context, msg world.Message, attempt int) (err error) {
	ctx, span := e.spans.startMessageSpan(ctx, msg, attempt)
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	err = e.handleDelivery(ctx, msg, attempt)
	if errors.Is(err, world.ErrKeyUnavailable) && msg.Validate() == nil {
		return e.gate.refuseKey(ctx, msg, err)
	}
	return corruptRun(msg.RunID, err)
}

// corruptRun turns a delivery that failed on stored data the World found
// corrupt (world.ErrCorrupt: a missing range of the run's log, a payload
// that does not verify) into a *PermanentError: retrying cannot repair the
// store, and the MaxDeliveries failure it would reach appends to a log
// known to be damaged (the trial's run was failed with new events written
// where deleted ones had been). The message is dropped, nothing is
// written, and the run stays as stored, every read of it failing with the
// World's error, until an operator restores what is missing and wakes it,
// or fails it (see RELIABILITY.md, Tampering and corruption).
func corruptRun(runID string, err error) error {
	if !errors.Is(err, world.ErrCorrupt) || IsPermanent(err) {
		return err
	}
	return &PermanentError{Reason: "run " + runID + ": its stored data is corrupt; nothing written", Err: err}
}

func (e *Engine) handleDelivery(ctx context.Context, msg world.Message, attempt int) error {
	if err := msg.Validate(); err != nil {
		return &PermanentError{Reason: "malformed message", Err: err}
	}
	wait := msg.NotBefore.Sub(e.now())
	if wait > maxEarlyWait {
		return e.hop(ctx, msg, wait)
	}
	// A run of a version this engine does not run is left for another
	// executor before anything counts against it (MaxDeliveries).
	if refused, err := e.gate.refuseVersion(ctx, msg); refused || err != nil {
		return err
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	total := max(msg.Delivered, 0) + attempt
	tooMany := e.cfg.MaxDeliveries > 0 && total > e.cfg.MaxDeliveries
	if tooMany || e.cfg.ReplaceAfter > 0 && attempt >= e.cfg.ReplaceAfter {
		// Only an executor that can open the run counts deliveries: one
		// without the run's key refuses the message (refuseKey), which
		// sends it back with Delivered as it was, so that deliveries to
		// executors without the key (stopped mid-delivery, say) are never
		// carried on by a replacement and never fail the run.
		if err := e.gate.keyCheck(ctx, msg.RunID); err != nil {
			return err
		}
	}
	if tooMany && msg.Refused > 0 {
		return e.recount(ctx, msg, attempt)
	}
	if tooMany {
		return e.failDeliveries(ctx, msg, total)
	}
	if e.cfg.ReplaceAfter > 0 && attempt >= e.cfg.ReplaceAfter {
		return e.replace(ctx, msg, attempt)
	}
	if msg.StepID != "" || len(msg.StepIDs) > 0 {
		return e.bg.executeBackground(ctx, msg)
	}
	return e.leases.continueRun(ctx, msg)
}

// hop re-enqueues a message that arrived before its NotBefore. It reads the
// run first (one read per hop): the wake-up of a run that has finished, or
// that does not exist (never created, or expired), is dropped, so that a run
// cancelled or completed while a long timer was pending stops receiving one
// message per MaxQueueDelay. A failed read keeps the wake-up: it hops.
func (e *Engine) hop(ctx context.Context, msg world.Message, wait time.Duration) error {
	if e.finished(ctx, msg) {
		return nil
	}
	next := msg
	next.Hop++
	return e.enqueue(ctx, next, keyHop(msg, next.Hop))
}

// replace sends msg again as a new message, its delivery count carried on
// in Delivered, and acknowledges the one received attempt times (by
// returning nil): a queue counts receives, and a message whose executors
// died with it (SIGKILLed, out of memory, a Lambda timeout) would
// otherwise reach the queue's receive limit and be dead-lettered, leaving
// a live run waiting for an operator. MaxDeliveries still counts every
// delivery. The new message is due when msg was (its NotBefore). It is
// sent even for a run at rest: run_deactivated may commit with the end,
// before the end's side effects (a parent notified), which a message of an
// executor killed in between must still run.
//
// It is sent under a key naming the received message (keyResend), so
// that the old message, received again after its executor was killed
// between the send and the acknowledgement, is acknowledged as replaced
// instead of sent a second time: without it, every such kill forked the
// run's messages, and under a high kill rate the forks multiplied (one
// parent's messages delivered 1,121 times in TestChaosLambda). A key
// claimed by a replacer not known to have sent (world.ErrKeyPending: it
// may have been killed before its send) is no proof of a send, so the
// replacement is then sent under no key: at worst one more copy, which
// the run lease makes harmless, and never a run left with no message.
func (e *Engine) replace(ctx context.Context, msg world.Message, attempt int) error {
	next := msg
	next.Delivered = max(msg.Delivered, 0) + attempt
	if err := e.resend(ctx, msg, next, "replace"); err != nil {
		return err
	}
	e.log.Info("engine: message received too often (its executors lost); sent again as a new message",
		"run", msg.RunID, "step", msg.StepID, "attempt", attempt, "delivered", next.Delivered)
	return nil
}

// recount sends msg, a message that was refused for its run's version
// (msg.Refused > 0) and is now at the delivery limit, again as a new
// message that counts only this delivery (Delivered one higher) and no
// refusal (Refused 0), and acknowledges it. A queue counts every receive,
// and a refused message may be received again while an executor that
// does not run its version is still sending it back (its visibility ran
// out under load): the executor that sends it back cannot acknowledge a
// receive it no longer holds, and the one that received it again finds
// the send-back claimed and fails. Those receives are refusals, which
// never count against a run; the receive count cannot tell them from
// this executor's, so it counts none of the message's receives but this
// one. The copy has Refused 0: at its own limit it fails the run, unless
// it was refused again, so a message that keeps failing on executors of
// its version still ends its run, after at most MaxDeliveries deliveries
// more per refusal.
func (e *Engine) recount(ctx context.Context, msg world.Message, attempt int) error {
	next := msg
	next.Refused = 0
	next.Delivered = max(msg.Delivered, 0) + 1
	if err := e.resend(ctx, msg, next, "recount"); err != nil {
		return err
	}
	e.log.Info("engine: refused message received too often (refusals count no delivery); sent again as a new message",
		"run", msg.RunID, "step", msg.StepID, "attempt", attempt, "refused", msg.Refused, "delivered", next.Delivered)
	return nil
}

// resend sends next in place of the received message msg, under a key
// naming msg and why (keyResend), or under none when that key is claimed
// by a sender not known to have sent (see replace).
func (e *Engine) resend(ctx context.Context, msg, next world.Message, why string) error {
	err := e.enqueue(ctx, next, keyResend(why, msg))
	if errors.Is(err, world.ErrKeyPending) {
		e.log.Info("engine: a replacement's key is claimed by a sender not known to have sent; sent under no key",
			"run", msg.RunID, "step", msg.StepID, "why", why)
		err = e.enqueue(ctx, next, "")
	}
	return err
}

// failDeliveries fails the run of a message redelivered too often.
// The caller has checked the key (keyCheck).
func (e *Engine) failDeliveries(ctx context.Context, msg world.Message, attempt int) error {
	data := &world.ErrorData{
		Type:    TypeMaxDeliveries,
		Message: fmt.Sprintf("message for run %s (step %q) was delivered %d times, more than %d", msg.RunID, msg.StepID, attempt, e.cfg.MaxDeliveries),
	}
	_, err := e.appendFenced(ctx, &world.AppendParams{RunID: msg.RunID, Events: []world.EventInput{
		{Data: &world.RunFailed{Error: data, ErrorCode: world.CodeMaxDeliveriesExceeded}},
	}})
	switch {
	case err == nil:
		e.log.Warn("engine: run failed: too many deliveries", "run", msg.RunID, "attempt", attempt)
		_ = e.rest.endAndRest(ctx, msg.RunID, "", nil, false, world.RunStatusFailed) // a failed run has no cleanup: no error
		return nil
	case errors.Is(err, world.ErrConflict), errors.Is(err, world.ErrGone):
		return nil // already finished
	case errors.Is(err, world.ErrNotFound):
		return &PermanentError{Reason: "run " + msg.RunID + " not found", Err: err}
	}
	return err
}

// ExecutionContext is the engine's part of a run's execution context: its
// lineage, and the hook to resume with the run's outcome when it ends (a
// child run resuming its parent).
type ExecutionContext struct {
	ParentRunID string `json:"parentRunId,omitempty"`
	RootRunID   string `json:"rootRunId,omitempty"`
	NotifyToken string `json:"notifyHookToken,omitempty"`
	// Trace is the W3C trace context (traceparent, tracestate) of the span
	// that started the run: its sessions and steps continue that trace.
	Trace map[string]string `json:"trace,omitempty"`
}

// RunOutcome is the payload a finished child run delivers to its parent's
// hook.
type RunOutcome struct {
	RunID     string           `json:"runId"`
	Status    world.RunStatus  `json:"status"`
	Output    json.RawMessage  `json:"output,omitempty"`
	Error     *world.ErrorData `json:"error,omitempty"`
	ErrorCode string           `json:"errorCode,omitempty"`
}

// notifies reports whether an execution context names a parent's hook to
// notify of the run's outcome (a child run's).
func notifies(execCtx json.RawMessage) bool {
	if len(execCtx) == 0 {
		return false
	}
	var ec ExecutionContext
	return json.Unmarshal(execCtx, &ec) == nil && ec.NotifyToken != ""
}

// ResumeHook delivers payload to the active hook holding token and enqueues
// a continuation of its run. A missing or disposed hook, or one whose run has
// finished, is world.ErrNotFound.
func (e *Engine) ResumeHook(ctx context.Context, token string, payload json.RawMessage) (*world.Hook, error) {
	return ResumeHook(ctx, e.w, e.now, token, payload)
}

// ResumeHook is Engine.ResumeHook for any World.
func ResumeHook(ctx context.Context, w world.World, now func() time.Time, token string, payload json.RawMessage) (*world.Hook, error) {
	h, err := w.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: token})
	if err != nil {
		return nil, err
	}
	// A World that does not seal (no encryption configured) must not put a
	// payload in clear into a sealed run: the run could never read it.
	run, err := w.GetRun(ctx, &world.GetRunParams{RunID: h.RunID})
	if err != nil {
		if errors.Is(err, world.ErrGone) {
			return nil, fmt.Errorf("%w: hook %q: %v", world.ErrNotFound, token, err)
		}
		return nil, err
	}
	if err := sealedNoWrite(run.RunID, run.Input, run.ExecutionContext, "deliver a hook payload"); err != nil {
		return nil, err
	}
	res, err := w.Append(ctx, &world.AppendParams{RunID: h.RunID, Events: []world.EventInput{
		{CorrelationID: h.HookID, Data: &world.HookReceived{Token: token, Payload: payload}},
	}})
	if err != nil {
		if errors.Is(err, world.ErrNotFound) || errors.Is(err, world.ErrGone) || errors.Is(err, world.ErrConflict) {
			return nil, fmt.Errorf("%w: hook %q: %v", world.ErrNotFound, token, err)
		}
		return nil, err
	}
	ev := res.Results[0].Event
	if err := Wake(ctx, w, now, h.RunID, keyHook(ev.EventID)); err != nil {
		return h, err
	}
	return h, nil
}

// Wake enqueues a continuation of a run (after a write that may unblock it),
// deduplicated by key.
func Wake(ctx context.Context, w world.World, now func() time.Time, runID, key string) error {
	body, err := world.EncodeMessage(world.Message{RunID: runID, RequestedAt: now()})
	if err != nil {
		return err
	}
	_, err = w.Enqueue(ctx, &world.EnqueueParams{Body: body, IdempotencyKey: key})
	return err
}
