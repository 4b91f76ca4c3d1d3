package engine

// A session that loses its run lease stops: the lease guard.
//
// The fence on every commit (AppendParams.IfLastSeq) keeps two holders of
// one run from both committing on the same log: whichever commits second
// is refused. It does not keep a session whose lease lapsed (a stalled
// process, a World it could not reach to renew) from running steps and
// committing while the run's new holder has not committed yet, and every
// step such a session runs is work done twice. So keepLease watches the
// renewals: once one is refused (world.ErrLeaseLost: the lease expired or
// another owner holds it), or the renewals keep failing until the lease
// may have lapsed, the session's guard is tripped. That cancels the
// session's context, so its loop ends and its inline steps see ctx.Done;
// every commit the session would still make (port.append under the
// session's context, including the detached contexts of its clean-up) is
// refused with the guard's error and never reaches the World; and it gives
// back no lease (releaseRunLease), since the one it held is no longer its
// own. The delivery fails with an error matching world.ErrLeaseLost and
// is retried: the new holder goes on with the run meanwhile, and the
// retry finds its lease held (bounce) or the run moved on.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

// leaseGuard is tripped when a session's run lease is lost.
type leaseGuard struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    error // why the lease is lost; nil while it is held
}

type leaseGuardKey struct{}

// guardLease returns ctx with a lease guard, which cancels the returned
// context when tripped; stop releases the context's resources.
func guardLease(ctx context.Context) (context.Context, *leaseGuard, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	g := &leaseGuard{cancel: cancel}
	return context.WithValue(ctx, leaseGuardKey{}, g), g, func() { cancel(nil) }
}

// trip records that the lease is lost (err matches world.ErrLeaseLost) and
// cancels the session's context. Only the first trip counts.
func (g *leaseGuard) trip(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
		g.cancel(err)
	}
}

// lost returns why the lease is lost, nil while it is held.
func (g *leaseGuard) lost() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// leaseLost returns why the lease of the session ctx belongs to is lost:
// nil while it is held, or outside a session. Contexts detached with
// context.WithoutCancel keep the guard.
func leaseLost(ctx context.Context) error {
	g, _ := ctx.Value(leaseGuardKey{}).(*leaseGuard)
	return g.lost()
}

// renewLease renews the run lease owner holds once, for keepLease: it
// returns when the lease counts as renewed from (the time before the
// call), or trips g and returns false when it is lost. A renewal refused
// with world.ErrLeaseLost loses it at once; any other failure loses it
// once two thirds of the TTL have passed since the last renewal, as the
// next renewal (a third later) could come after the expiry.
func (rl *runLeases) renewLease(ctx context.Context, g *leaseGuard, runID, owner string, renewed time.Time) (time.Time, bool) {
	ttl := rl.cfg.RunLeaseTTL
	at := rl.now()
	_, err := rl.w.RenewRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: owner, TTL: ttl})
	switch {
	case err == nil:
		return at, true
	case ctx.Err() != nil:
		return renewed, true // the session is ending anyway
	case errors.Is(err, world.ErrLeaseLost):
		rl.log.Warn("engine: run lease lost; the session stops", "run", runID, "owner", owner, "err", err)
		g.trip(fmt.Errorf("engine: run %s: session stopped, its run lease is lost: %w", runID, err))
		return renewed, false
	}
	if since := rl.now().Sub(renewed); since >= ttl-ttl/3 {
		rl.log.Warn("engine: run lease not renewed in time; the session stops", "run", runID, "owner", owner, "since", since, "err", err)
		g.trip(fmt.Errorf("engine: run %s: session stopped, its run lease was not renewed for %s (%w): %w",
			runID, since, world.ErrLeaseLost, err))
		return renewed, false
	}
	rl.log.Warn("engine: renew run lease", "run", runID, "err", err)
	return renewed, true
}
