package engine

// The port: what every part of the engine shares (the World and its
// limits, the registry, the configuration with its logger and clock) and
// the few writes and reads they all make through it: append and
// appendFenced (commit events, told to the logger and the metrics once
// durable), enqueue (send a message), finished and atRest (read whether a
// run still needs its messages), now and budget (the clock and the
// invocation's deadline). Each of the engine's parts holds a pointer to
// the one port and calls nothing above it (see doc.go, "The engine's
// parts").

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinflow/skein/world"
)

// port is the engine's shared state and its writes and reads of the World.
type port struct {
	cfg Config
	w   world.World
	reg Registry
	log *slog.Logger
	// lim are the World's limits (limits.go).
	lim world.Limits
	// logs keeps the logs of runs between their sessions (logcache.go).
	logs *logCache
	// recent keeps what background executors appended until the run's
	// session loads it (recent.go).
	recent *recentAppends
	// known keeps the steps as this process's Appends left them
	// (knownsteps.go).
	known *knownSteps
}

func (pt *port) now() time.Time { return pt.cfg.Now() }

// finished reports whether msg's run has ended or does not exist, which
// makes a wake-up still on its way for it pointless. A run that has ended
// with compensations still to run has not finished: the wake-up may be
// the one that goes on with them (compensate.go).
func (pt *port) finished(ctx context.Context, msg world.Message) bool {
	run, err := pt.w.GetRun(ctx, &world.GetRunParams{RunID: msg.RunID})
	switch {
	case err == nil && run.Status.Terminal() && !compWork(run):
		pt.log.Debug("engine: dropped the wake-up of a finished run", "run", msg.RunID, "status", run.Status, "step", msg.StepID, "notBefore", msg.NotBefore, "hop", msg.Hop)
		return true
	case errors.Is(err, world.ErrNotFound):
		pt.log.Debug("engine: dropped the wake-up of an unknown run", "run", msg.RunID, "step", msg.StepID, "notBefore", msg.NotBefore, "hop", msg.Hop, "err", err)
		return true
	case errors.Is(err, world.ErrGone):
		// Part of the run has expired (a run that outlived the store's
		// retention): it cannot go on, so its wake-up is pointless too.
		pt.log.Warn("engine: dropped the wake-up of a run that can no longer be read", "run", msg.RunID, "step", msg.StepID, "err", err)
		return true
	case err != nil:
		pt.log.Debug("engine: could not read the run before a hop; hopping anyway", "run", msg.RunID, "err", err)
	}
	return false
}

// atRest reports whether runID's run is at rest (ended and deactivated:
// no step of it runs, no compensation or cleanup is owed, see rest.go) or
// does not exist (never created, expired, or partly expired): nothing a
// message could do for it is left, so a message that would be sent again
// for it (a bounce, a cover, a refusal sent back) is dropped instead, and
// the one in hand acknowledged. A run that has ended but is not at rest
// still needs its messages (its rest checks, its compensations). A failed
// read is not at rest: the message is sent again, as before. So is a child
// run's (its parent must be notified) and a cancelled run's (its children
// cancelled): run_deactivated commits with the end, before those side
// effects, and the message may be what runs them should the holder of the
// lease have died in between. It costs one read, only on the paths that
// would send a message.
func (pt *port) atRest(ctx context.Context, runID, why string) bool {
	run, err := pt.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	switch {
	case err == nil && run.Status.Terminal() && run.Deactivated() && run.Status != world.RunStatusCancelled && !notifies(run.ExecutionContext):
		pt.log.Debug("engine: message of a run at rest dropped, not sent again", "run", runID, "status", run.Status, "path", why)
		return true
	case errors.Is(err, world.ErrNotFound), errors.Is(err, world.ErrGone):
		pt.log.Debug("engine: message of an unknown run dropped, not sent again", "run", runID, "path", why, "err", err)
		return true
	}
	return false
}

// enqueue sends m, delayed until m.NotBefore (capped at MaxQueueDelay; the
// receiver hops for the rest).
func (pt *port) enqueue(ctx context.Context, m world.Message, key string) error {
	var delay time.Duration
	if !m.NotBefore.IsZero() {
		delay = min(max(0, m.NotBefore.Sub(pt.now())), pt.cfg.MaxQueueDelay)
	}
	if m.RequestedAt.IsZero() {
		m.RequestedAt = pt.now()
	}
	body, err := world.EncodeMessage(m)
	if err != nil {
		return err
	}
	if _, err := pt.w.Enqueue(ctx, &world.EnqueueParams{Body: body, Delay: delay, IdempotencyKey: key}); err != nil {
		return fmt.Errorf("engine: enqueue for run %s: %w", m.RunID, err)
	}
	return nil
}

// append commits p and tells what it committed (ObserveCommit). Under a
// session that lost its run lease it commits nothing and returns why
// (leaseLost).
func (pt *port) append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if err := leaseLost(ctx); err != nil {
		return nil, err
	}
	res, err := pt.w.Append(ctx, p)
	if err == nil {
		ObserveCommit(ctx, pt.log, pt.cfg.Metrics, res)
	}
	return res, err
}

// appendFenced is AppendFenced for the engine's writers outside a
// session's replay: refused once the caller's run lease is lost, as
// port.append, and observed once committed.
func (pt *port) appendFenced(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if err := leaseLost(ctx); err != nil {
		return nil, err
	}
	res, err := AppendFenced(ctx, pt.w, p)
	if err == nil {
		ObserveCommit(ctx, pt.log, pt.cfg.Metrics, res)
	}
	return res, err
}

// budget returns when an invocation that starts now must stop starting
// work: MaxInvocation from now, or BudgetMargin before ctx's deadline.
func (pt *port) budget(ctx context.Context) time.Time {
	deadline := pt.now().Add(pt.cfg.MaxInvocation)
	if d, ok := ctx.Deadline(); ok && d.Add(-pt.cfg.BudgetMargin).Before(deadline) {
		deadline = d.Add(-pt.cfg.BudgetMargin)
	}
	return deadline
}
