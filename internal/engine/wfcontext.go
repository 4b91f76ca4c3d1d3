package engine

import (
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// What workflow code sees of the engine: its Context, the Futures of its
// operations and its Hooks, all backed by the replayer.

// Context is what a workflow function sees of the engine. Its methods must
// be called only from the workflow's own goroutine (the coroutine).
type Context struct {
	r *replayer
}

// RunID returns the run's ID.
func (c *Context) RunID() string { return c.r.meta.runID }

// WorkflowName returns the workflow's name.
func (c *Context) WorkflowName() string { return c.r.meta.workflowName }

// StartedAt returns when the run was created.
func (c *Context) StartedAt() time.Time { return c.r.meta.createdAt }

// ExecutionContext returns the run's execution context (lineage).
func (c *Context) ExecutionContext() json.RawMessage { return c.r.meta.execCtx }

// Now returns the workflow's deterministic time: the run's creation time,
// advanced by the events consumed so far.
func (c *Context) Now() time.Time { return c.r.now }

// Rand returns the run's deterministic random source. It is seeded by the
// run ID and is not cryptographically strong: do not draw secrets from it
// (use NewToken).
func (c *Context) Rand() *rand.Rand { return c.r.det.user }

// NewID returns a deterministic ULID timestamped with Now. It is derived
// from the run ID: an identifier, not a secret.
func (c *Context) NewID() string {
	c.r.enter("Context.NewID")
	return c.r.det.userID(ulid.Timestamp(c.r.now))
}

// Logger returns the engine's logger.
func (c *Context) Logger() *slog.Logger { return c.r.logger }

// NewToken returns a deterministic URL-safe token: TokenLength characters
// (132 random bits) derived from the run's secret, which only the log
// holds, so that nobody can compute it from the run ID; stable across
// replays. A run created before run secrets existed draws 21-character
// tokens from its run ID, as it always did.
func (c *Context) NewToken() string {
	c.r.enter("a hook's generated token")
	return c.r.det.token()
}

// Progress reports how many settlements the run has seen (futures settled,
// hook registrations, conflicts and payloads) and how many of them may have
// failed a future (a step's failure, a hook's conflict, any hook payload).
// Both only grow while the workflow runs, and nothing but a settlement
// changes a future's state while the workflow waits, so a wait condition
// over many futures that saw the same counts before need not look again
// (the SDK's All, Any, Race and Select).
func (c *Context) Progress() (settled, failures int64) { return c.r.settles, c.r.failures }

// Await parks the workflow until cond holds. cond is evaluated after every
// event the engine applies; it must only read workflow state.
func (c *Context) Await(cond func() bool) {
	c.r.enter("waiting (a future's Get, All, Race, Any, Select or a hook's Receive)")
	c.r.co.await(cond)
}

// Step asks for a step. It is created at the workflow's next suspension.
func (c *Context) Step(name string, input json.RawMessage) *Future {
	o := c.r.newOp(opStep, world.PrefixStep, name)
	o.input = input
	return &Future{o: o}
}

// Wait asks for a wait that elapses at resumeAt.
func (c *Context) Wait(resumeAt time.Time) *Future {
	o := c.r.newOp(opWait, world.PrefixWait, "")
	o.resumeAt = resumeAt
	return &Future{o: o}
}

// Sleep asks for a wait that elapses d after it is committed (the workflow's
// Now lags behind the wall clock while steps run, so a sleep is measured
// from when it is recorded; the resulting time is in the log, so replay is
// unaffected).
func (c *Context) Sleep(d time.Duration) *Future {
	o := c.r.newOp(opWait, world.PrefixWait, "")
	o.duration = max(d, 0)
	return &Future{o: o}
}

// Hook asks for a hook holding token. It is registered at the workflow's
// next suspension; a token another active hook holds makes it conflicted.
func (c *Context) Hook(token string, metadata json.RawMessage, isWebhook bool) *Hook {
	o := c.r.newOp(opHook, world.PrefixHook, token)
	o.metadata, o.isWebhook = metadata, isWebhook
	return &Hook{o: o, r: c.r}
}

// Future is the outcome of a step or a wait.
type Future struct{ o *op }

// ID returns the step's or wait's correlation ID.
func (f *Future) ID() string { return f.o.id }

// Done reports whether the future has settled.
func (f *Future) Done() bool { return f.o.settled }

// Order is the future's position among all settlements of the run (log
// order); valid once Done.
func (f *Future) Order() int64 { return f.o.order }

// Result returns the step's result, or its failure.
func (f *Future) Result() (json.RawMessage, *world.ErrorData) { return f.o.result, f.o.failure }

// Attempt returns the step's latest attempt as its retry policy counts it
// (attempts interrupted by the loss of their executor are not counted).
func (f *Future) Attempt() int { return f.o.attempt - f.o.lost }

// Hook is a hook the workflow created.
type Hook struct {
	o *op
	r *replayer
}

// ID returns the hook's ID.
func (h *Hook) ID() string { return h.o.id }

// Token returns the hook's token.
func (h *Hook) Token() string { return h.o.name }

// Registered reports whether the hook's registration (or its conflict) has
// been recorded; RegisteredOrder is its settlement order.
func (h *Hook) Registered() bool { return h.o.registered }

// RegisteredOrder returns the registration's settlement order.
func (h *Hook) RegisteredOrder() int64 { return h.o.regOrder }

// ConflictRunID returns the run holding the token when registration
// conflicted, or "".
func (h *Hook) ConflictRunID() string { return h.o.conflictRunID }

// Len returns the number of payloads received so far.
func (h *Hook) Len() int { return len(h.o.payloads) }

// Payload returns payload i and its settlement order.
func (h *Hook) Payload(i int) (json.RawMessage, int64) {
	p := h.o.payloads[i]
	return p.data, p.order
}

// Disposed reports whether Dispose was called.
func (h *Hook) Disposed() bool { return h.o.disposeWanted }

// Dispose releases the hook's token at the workflow's next suspension.
func (h *Hook) Dispose() {
	h.r.enter("Hook.Dispose")
	if h.o.disposeWanted {
		return
	}
	h.o.disposeWanted = true
	h.o.disposeAt = len(h.r.ops)
	h.r.disposals = append(h.r.disposals, h.o)
}
