package engine

// Taking a run on: the run lease a session runs under, its renewal and
// release, what happens after the release (afterRelease), and a
// continuation that finds the lease held (bounce).

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/internal/renew"
	"github.com/skeinflow/skein/world"
)

// runLeases decides who holds a run and for how long: it takes the run
// lease under a fresh owner, runs a session under it (renewing it, and
// watching the session for a stuck workflow: stuck.go), releases it, and
// goes on or hands the run over when more arrived meanwhile. Its
// sessions call the parts below them (parts).
type runLeases struct {
	*parts
	id     string // the engine's ID, prefix of its lease owners
	owners atomic.Int64
}

// continueRun continues a run under its lease.
func (rl *runLeases) continueRun(ctx context.Context, msg world.Message) error {
	owner, err := rl.acquireRunLease(ctx, msg.RunID, "")
	if err != nil {
		if errors.Is(err, world.ErrLeaseHeld) {
			return rl.bounce(ctx, msg, err)
		}
		return err
	}
	return rl.continueRetry(ctx, msg.RunID, owner, rl.budget(ctx), msg.HoldAttempt)
}

// acquireRunLease takes the run lease under a fresh owner, which carries
// tag when it is not empty: the tag of the message the lease is taken
// under (msgTag, see coverHolder).
func (rl *runLeases) acquireRunLease(ctx context.Context, runID, tag string) (owner string, err error) {
	owner = fmt.Sprintf("%s-%d", rl.id, rl.owners.Add(1))
	if tag != "" {
		owner += ownerTagSep + tag
	}
	_, err = rl.w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: owner, TTL: rl.cfg.RunLeaseTTL})
	return owner, err
}

// continueLeased continues a run under the lease owner holds until the
// workflow waits on others, then releases the lease. When events arrived
// that the session did not see (background steps completed while it held
// the lease, see afterRelease), it takes the lease again and goes on, in
// the same invocation while the budget lasts, with the log it has loaded:
// the run needs no message, no invocation and no reload of its own to take
// them in. Should another executor have taken the lease meanwhile, that one
// goes on instead.
func (rl *runLeases) continueLeased(ctx context.Context, runID, owner string, deadline time.Time) error {
	return rl.continueRetry(ctx, runID, owner, deadline, 0)
}

// continueRetry is continueLeased for a message that retries hold attempt
// retry of a held run (0: none; see holdRun).
// The session runs under a lease guard (leaseguard.go): should it lose the
// lease, it stops and the delivery fails with the guard's error.
func (rl *runLeases) continueRetry(ctx context.Context, runID, owner string, deadline time.Time, retry int) error {
	ctx, g, stop := guardLease(ctx)
	defer stop()
	w := newSliceWatch(owner)
	err := rl.runSession(ctx, runID, w, func(ctx context.Context) error {
		return rl.continueWatched(ctx, runID, owner, deadline, retry, w)
	})
	if lost := g.lost(); lost != nil && err != nil {
		return lost
	}
	return err
}

// continueWatched is continueRetry's session, on the goroutine runSession
// watches.
func (rl *runLeases) continueWatched(ctx context.Context, runID, owner string, deadline time.Time, retry int, w *sliceWatch) (err error) {
	s := newSession(rl.parts, runID, retry, deadline, w)
	st, kept, l := rl.logs.take(ctx, runID)
	if st != nil {
		s.runState = *st // loadNew reads only what was appended since
	}
	ended := false // the session ended well: its workflow may be kept (sticky.go)
	defer func() { rl.logs.put(runID, s.runState, s.keep(ended), l) }()
	defer func() { s.endSpan(err, s.runStatus) }()
	for first := true; ; first = false {
		more, err := rl.underLease(ctx, s, owner, first, kept, l)
		kept = nil
		if err != nil || !more {
			ended = err == nil
			return err
		}
		key := keyAfter(runID, s.lastSeq)
		if !rl.now().Before(deadline) {
			return rl.enqueue(ctx, world.Message{RunID: runID}, key)
		}
		tag := ownerTag(owner) // the message this one continues under
		owner, err = rl.acquireRunLease(ctx, runID, tag)
		w.setOwner(owner)
		switch {
		case errors.Is(err, world.ErrLeaseHeld):
			// The holder took it after this session released it, so it
			// loads what arrived; what arrives later finds it held. A
			// holder under this session's own message (another delivery
			// of it) would lose that message with this acknowledgement.
			return rl.coverHolder(ctx, runID, delivery{tag: tag}, err)
		case err != nil:
			rl.log.Warn("engine: take the run lease again", "run", runID, "err", err)
			return rl.enqueue(ctx, world.Message{RunID: runID}, key)
		}
	}
}

// underLease runs session s (from the start when first, otherwise from
// where it stopped, see session.resume) under the lease owner holds and
// releases the lease. more reports that events arrived after the session
// last looked (afterRelease), so the run must go on.
//
// The session's workflow outlives the lease, parked (session.park): the
// session goes on with it after afterRelease, and the run's next session
// in this process with it after this one (sticky.go). kept is the one the
// last session left (nil: none), for the first.
func (rl *runLeases) underLease(ctx context.Context, s *session, owner string, first bool, kept *sticky, l *loan) (more bool, err error) {
	runID := s.runID
	g, _ := ctx.Value(leaseGuardKey{}).(*leaseGuard)
	stopRenew := rl.keepLease(ctx, g, runID, owner)
	rl.logs.releasing(l, false)
	released, releaseErr := false, error(nil)
	release := func() {
		if released {
			return
		}
		released = true
		rl.logs.releasing(l, true) // the next holder may wait for the log (take)
		stopRenew()
		releaseErr = rl.releaseRunLease(ctx, runID, owner)
	}
	defer release()
	s.lastPoll = rl.now()
	if first {
		err = s.run(ctx, kept)
	} else {
		err = s.resume(ctx)
	}
	if errors.Is(err, errMoved) {
		err = <-s.moved
	}
	if err != nil {
		return false, err // the message is retried: its continuation loads everything
	}
	s.park()
	release()
	return s.afterRelease(ctx, releaseErr)
}

// afterRelease is the lease holder's half of the background wake-up
// handshake (see background.wakeAfterStep): a background executor that
// commits a step's outcome while the run lease is held leaves the run to
// the holder, which, once it has released the lease, reads the log past
// what it has loaded and reports whether anything arrived (the run then
// goes on, see continueLeased).
//
// Why no completion is lost: the executor (E) commits its outcome (C) and
// then tries to take the run lease (A); the holder (H) releases the lease
// (R) and then reads the log (L). The World's lease operations and strongly
// consistent log reads are linearizable. If A finds the lease held by H,
// then A precedes R, so C < A < R < L: H's read sees C and H goes on.
// Otherwise A follows R (or the lease was held by nobody, or by another
// executor, which goes on itself after loading the log) and E goes on.
// Either way at least one side takes the completion in.
//
// It reads only when the run is not finished and has steps this session
// did not settle (only they can be completed by background executors).
// When the release failed, the lease may stay held until it expires and an
// executor may keep seeing it held: a continuation is scheduled at the
// lease's expiry instead.
func (s *session) afterRelease(ctx context.Context, releaseErr error) (bool, error) {
	if s.r == nil || s.log.len() == 0 || s.runStatus.Terminal() || len(s.r.openSteps) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if releaseErr != nil {
		at := s.e.now().Add(s.e.cfg.RunLeaseTTL + expirySlack)
		m := world.Message{RunID: s.runID, NotBefore: at}
		return false, s.e.enqueue(ctx, m, keyUnreleased(s.runID, s.lastSeq))
	}
	n, err := s.loadNew(ctx, false) // the session is over: read under the cleanup timeout
	if err != nil {
		return false, err
	}
	return n > 0 && !s.runStatus.Terminal(), nil
}

// bounce re-enqueues a continuation that found the run lease held, never
// dropping it: the delay grows with each bounce (LeaseRetryDelay doubling)
// but never past the holder's lease expiry, so a dead holder costs one lease
// TTL. Bounces in one delay window share an idempotency key: one
// continuation after the holder is enough, as it loads everything. A
// continuation of a run at rest is dropped instead (atRest): the holder is
// another message of it, and bouncing would keep a finished run's
// duplicates circling the queue.
func (rl *runLeases) bounce(ctx context.Context, msg world.Message, held error) error {
	if rl.atRest(ctx, msg.RunID, "lease busy") {
		return nil
	}
	now := rl.now()
	var expires time.Time
	if re := refusalOf(held); re != nil && re.Kind == world.ErrLeaseHeld {
		expires = re.Until
	}
	delay, bucket := bounceDelay(now, rl.cfg.LeaseRetryDelay, msg.Hop, expires)
	m := world.Message{RunID: msg.RunID, NotBefore: now.Add(delay), Hop: msg.Hop + 1, HoldAttempt: msg.HoldAttempt}
	return rl.enqueue(ctx, m, keyBusy(msg.RunID, msg.HoldAttempt, msg.Hop+1, bucket))
}

// releaseRunLease gives the run lease owner holds back, even when ctx is
// done (within cleanupTimeout). A failure is logged and returned: the
// lease then stays held until it expires. A session that lost its lease
// (leaseLost) gives nothing back: the lease is no longer its own.
func (rl *runLeases) releaseRunLease(ctx context.Context, runID, owner string) error {
	if leaseLost(ctx) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := rl.w.ReleaseRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: owner})
	if err != nil {
		rl.log.Warn("engine: release run lease", "run", runID, "err", err)
	}
	return err
}

// keepLease renews the run lease every third of its TTL until stopped.
// When a renewal finds the lease lost (renewLease), it trips g, which stops
// the session (leaseguard.go); a nil g only logs.
func (rl *runLeases) keepLease(ctx context.Context, g *leaseGuard, runID, owner string) (stop func()) {
	if g == nil {
		g = &leaseGuard{cancel: func(error) {}}
	}
	renewed := rl.now() // taken a moment before: renewLease leaves a third of the TTL
	return renew.Every(ctx, rl.cfg.RunLeaseTTL/3, func() bool {
		var held bool
		renewed, held = rl.renewLease(ctx, g, runID, owner, renewed)
		return held
	})
}
