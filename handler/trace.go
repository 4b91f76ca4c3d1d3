package handler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// flushTimeout bounds the flush of spans before an invocation returns, and
// flushSlack is what it leaves of the invocation's time.
const (
	flushTimeout = 2 * time.Second
	flushSlack   = 50 * time.Millisecond
)

// startSpan starts the span of one invocation of the flow handler.
func (h *sqsHandler) startSpan(ctx context.Context, requestID string, records int) (context.Context, trace.Span) {
	tp := h.cfg.Worker.Engine.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer("github.com/skeinflow/skein/handler").Start(ctx, "skein.invocation",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("faas.invocation_id", requestID),
			attribute.String("faas.trigger", "pubsub"),
			attribute.String("messaging.system", "aws_sqs"),
			attribute.Int("messaging.batch.message_count", records),
		))
}

// endSpan ends the invocation's span and flushes the provider, if it can
// be flushed, before the invocation returns.
func (h *sqsHandler) endSpan(ctx context.Context, span trace.Span) {
	span.End()
	f, ok := h.cfg.Worker.Engine.TracerProvider.(interface{ ForceFlush(context.Context) error })
	if !ok {
		return
	}
	// Within flushTimeout, and before the invocation's deadline.
	deadline := time.Now().Add(flushTimeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-flushSlack).Before(deadline) {
		deadline = d.Add(-flushSlack)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if err := f.ForceFlush(ctx); err != nil {
		h.log.WarnContext(ctx, "handler: flush spans", "err", err)
	}
}
