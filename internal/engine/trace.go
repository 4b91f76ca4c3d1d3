package engine

// OpenTelemetry spans: one per message handled (skein.message, a child of
// whatever span the caller's context holds: the Lambda invocation's, say),
// one per run session (skein.run) and one per step attempt (skein.step).
// A run's sessions and step attempts belong to the trace of the request
// that started the run: its W3C trace context is recorded in the run's
// execution context (run_created) and every session's span is its child,
// whichever invocation, process or message carries the session on. The
// message span, which belongs to the invocation's trace, is linked, not
// parent: one invocation handles messages of many runs.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/world"
)

// tracerName names the engine's tracer (its instrumentation scope).
const tracerName = "github.com/skeinflow/skein"

// Span attribute keys.
const (
	attrRunID       = attribute.Key("skein.run.id")
	attrWorkflow    = attribute.Key("skein.workflow.name")
	attrStepID      = attribute.Key("skein.step.id")
	attrStepName    = attribute.Key("skein.step.name")
	attrStepAttempt = attribute.Key("skein.step.attempt")
	attrMsgAttempt  = attribute.Key("skein.message.attempt")
	attrMsgStepIDs  = attribute.Key("skein.message.step_ids")
	attrOutcome     = attribute.Key("skein.outcome")
)

// TraceCarrier returns the W3C trace context (traceparent, tracestate) of
// the span ctx holds, nil when it holds none: what a run records to continue
// its starter's trace.
func TraceCarrier(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c
}

// tracing starts the engine's spans: a message's (Engine), a step
// attempt's (stepExec) and, through runSpan, a session's.
type tracing struct {
	*port
	parents atomic.Int64 // runParent's calls (for tests)
}

// runSpan is a session's span (beginSpan), from when the session began.
type runSpan struct {
	span  trace.Span
	began time.Time
}

// tracer returns the engine's tracer.
func (t *tracing) tracer() trace.Tracer {
	tp := t.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// runOrigin returns a context whose remote parent is the run's origin
// (runParent), and the link to ctx's own span, if any.
func runOrigin(ctx context.Context, origin trace.SpanContext) (context.Context, []trace.Link) {
	var links []trace.Link
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		links = append(links, trace.Link{SpanContext: sc})
	}
	return trace.ContextWithRemoteSpanContext(ctx, origin), links
}

// runParent returns the remote parent of a run's spans: the trace context
// recorded in the run's execCtx. A run that recorded none (started outside
// any span) gets a trace of its own, derived from its ID (runTrace), so
// that its sessions still share one trace. It is always valid. It decodes
// execCtx (or hashes the run ID): a group computes it once for all its
// steps (stepExec.origin).
func (t *tracing) runParent(runID string, execCtx json.RawMessage) trace.SpanContext {
	t.parents.Add(1)
	var ec ExecutionContext
	if len(execCtx) > 0 && json.Unmarshal(execCtx, &ec) == nil && len(ec.Trace) > 0 {
		origin := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(ec.Trace))
		if sc := trace.SpanContextFromContext(origin); sc.IsValid() {
			return sc
		}
	}
	return runTrace(runID)
}

// runTrace is the trace of a run started outside any span: trace and parent
// span IDs hashed from the run ID, sampled. The parent is never exported
// (no process owns the run's whole life to end it): trace viewers show the
// run's sessions under a missing root, all in one trace.
func runTrace(runID string) trace.SpanContext {
	sum := sha256.Sum256([]byte("skein trace " + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// startMessageSpan starts the span of one message's handling.
func (t *tracing) startMessageSpan(ctx context.Context, msg world.Message, attempt int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attrRunID.String(msg.RunID), attrMsgAttempt.Int(attempt)}
	ids := msg.StepIDs
	if msg.StepID != "" {
		ids = append([]string{msg.StepID}, ids...)
	}
	if len(ids) > 0 {
		attrs = append(attrs, attrMsgStepIDs.StringSlice(ids))
	}
	return t.tracer().Start(ctx, "skein.message", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// beginSpan starts the session's span, once the session knows its run
// (runID, meta), dated from when the session began, in the run's trace.
func (s *runSpan) beginSpan(ctx context.Context, t *tracing, runID string, meta runMeta) {
	if s.span != nil {
		return
	}
	parent, links := runOrigin(ctx, t.runParent(runID, meta.execCtx))
	_, s.span = t.tracer().Start(parent, "skein.run",
		trace.WithTimestamp(s.began), trace.WithLinks(links...),
		trace.WithAttributes(attrRunID.String(runID), attrWorkflow.String(meta.workflowName)))
}

// endSpan ends the session's span with err's status, or the run's status.
func (s *runSpan) endSpan(err error, status world.RunStatus) {
	if s.span == nil {
		return
	}
	switch {
	case err != nil:
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	case status == world.RunStatusFailed || status == world.RunStatusHeld:
		s.span.SetStatus(codes.Error, "run "+string(status))
	}
	s.span.SetAttributes(attrOutcome.String(string(status)))
	s.span.End()
}

// stepContext returns the context a session's inline steps start their
// spans under: its own span's.
func (s *runSpan) stepContext(ctx context.Context) context.Context {
	if s.span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, s.span)
}

// startStepSpan starts the span of step attempt x: a child of the session's
// span when ctx holds it (inline), else of the run's origin (x.origin,
// or runParent when x has none), linked to the message's span (a
// background step).
func (t *tracing) startStepSpan(ctx context.Context, x stepExec, inline bool) (context.Context, trace.Span) {
	var links []trace.Link
	parent := ctx
	if !inline {
		origin := x.origin
		if !origin.IsValid() {
			origin = t.runParent(x.run.runID, x.run.execCtx)
		}
		parent, links = runOrigin(ctx, origin)
	}
	return t.tracer().Start(parent, "skein.step "+x.stepName, trace.WithLinks(links...), trace.WithAttributes(
		attrRunID.String(x.run.runID), attrWorkflow.String(x.run.workflowName), attrStepID.String(x.stepID),
		attrStepName.String(x.stepName), attrStepAttempt.Int(x.retryAttempt())))
}

// endStepSpan ends a step attempt's span with its outcome.
func endStepSpan(span trace.Span, o outcome) {
	switch o.kind {
	case outCompleted:
		span.SetAttributes(attrOutcome.String("completed"))
	case outFailed, outRetrying:
		name := "failed"
		if o.kind == outRetrying {
			name = "retrying"
		}
		span.SetAttributes(attrOutcome.String(name))
		if o.failure != nil {
			span.SetStatus(codes.Error, o.failure.Message)
		}
	default:
		span.SetAttributes(attrOutcome.String("abandoned"))
	}
	span.End()
}
