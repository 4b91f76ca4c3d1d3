package handler

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// invocation tracks the request ID of the invocation in progress. Lambda
// runs one invocation at a time in an execution environment, so the logs
// written without a context (the engine's, the SDK's) belong to it.
type invocation struct{ id atomic.Pointer[string] }

func (i *invocation) set(id string) { i.id.Store(&id) }

func (i *invocation) requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	if p := i.id.Load(); p != nil {
		return *p
	}
	return ""
}

// requestIDHandler adds "requestId" to every record: the one in the
// record's context, else the invocation's in progress.
type requestIDHandler struct {
	inner slog.Handler
	inv   *invocation
}

func withRequestID(l *slog.Logger, inv *invocation) *slog.Logger {
	return slog.New(&requestIDHandler{inner: l.Handler(), inv: inv})
}

func (h *requestIDHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := h.inv.requestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("requestId", id))
	}
	return h.inner.Handle(ctx, r)
}

func (h *requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &requestIDHandler{inner: h.inner.WithAttrs(as), inv: h.inv}
}

func (h *requestIDHandler) WithGroup(name string) slog.Handler {
	return &requestIDHandler{inner: h.inner.WithGroup(name), inv: h.inv}
}
