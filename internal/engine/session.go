package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/world"
)

// session is one invocation's continuation of a run, under the run lease.
type session struct {
	e     *Engine
	runID string

	// The committed log, as loaded and committed by this session.
	log       eventLog
	lastSeq   int64
	runStatus world.RunStatus
	meta      runMeta
	hold      *holdState // the run's hold, while it is held

	// retryAttempt is the hold attempt the message retries
	// (world.Message.HoldAttempt; see holdRun).
	retryAttempt int

	wf *Workflow
	r  *replayer

	// Uncommitted deliveries (in delivery order) and the step outcomes
	// behind them, delivered again after a rebuild.
	pending []world.EventInput
	held    []outcome

	leases map[string]stepLease // current step leases read from the World (readStepLeases)

	inflight map[string]context.CancelFunc
	solo     func() outcome // runs the one step in flight, not started yet (launch)
	queued   map[string]bool
	deferred map[string]time.Time // excess steps held back, until when
	results  chan outcome
	late     []outcome // results that arrived after the workflow finished

	deadline time.Time
	draining bool
	lastPoll time.Time

	// moved receives the session's outcome from the goroutine it moved to
	// while its solo step ran long (runSolo); made at the first move.
	moved chan error
}

// errMoved ends a session loop whose session carries on on another
// goroutine, which delivers the outcome to session.moved.
var errMoved = errors.New("engine: session moved to another goroutine")

// errStale reports a commit refused because the run changed underneath.
type staleError struct{ err error }

func (e *staleError) Error() string { return "engine: stale commit: " + e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// continueRun continues a run under its lease.
func (e *Engine) continueRun(ctx context.Context, msg world.Message) error {
	owner, err := e.acquireRunLease(ctx, msg.RunID)
	if err != nil {
		if errors.Is(err, world.ErrLeaseHeld) {
			return e.bounce(ctx, msg, err)
		}
		return err
	}
	return e.continueRetry(ctx, msg.RunID, owner, e.budget(ctx), msg.HoldAttempt)
}

// acquireRunLease takes the run lease under a fresh owner.
func (e *Engine) acquireRunLease(ctx context.Context, runID string) (owner string, err error) {
	owner = fmt.Sprintf("%s-%d", e.id, e.owners.Add(1))
	_, err = e.w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: owner, TTL: e.cfg.RunLeaseTTL})
	return owner, err
}

// budget returns when an invocation that starts now must stop starting
// work: MaxInvocation from now, or BudgetMargin before ctx's deadline.
func (e *Engine) budget(ctx context.Context) time.Time {
	deadline := e.now().Add(e.cfg.MaxInvocation)
	if d, ok := ctx.Deadline(); ok && d.Add(-e.cfg.BudgetMargin).Before(deadline) {
		deadline = d.Add(-e.cfg.BudgetMargin)
	}
	return deadline
}

// continueLeased continues a run under the lease owner holds until the
// workflow waits on others, then releases the lease. When events arrived
// that the session did not see (background steps completed while it held
// the lease, see afterRelease), it takes the lease again and goes on, in
// the same invocation while the budget lasts, with the log it has loaded:
// the run needs no message, no invocation and no reload of its own to take
// them in. Should another executor have taken the lease meanwhile, that one
// goes on instead.
func (e *Engine) continueLeased(ctx context.Context, runID, owner string, deadline time.Time) error {
	return e.continueRetry(ctx, runID, owner, deadline, 0)
}

// continueRetry is continueLeased for a message that retries hold attempt
// retry of a held run (0: none; see holdRun).
func (e *Engine) continueRetry(ctx context.Context, runID, owner string, deadline time.Time, retry int) error {
	s := &session{
		e: e, runID: runID, retryAttempt: retry,
		inflight: make(map[string]context.CancelFunc),
		queued:   make(map[string]bool),
		deferred: make(map[string]time.Time),
		results:  make(chan outcome, max(e.cfg.InlineConcurrency, 1)),
		deadline: deadline,
	}
	defer s.close()
	for first := true; ; first = false {
		more, err := e.underLease(ctx, s, owner, first)
		if err != nil || !more {
			return err
		}
		key := keyAfter(runID, s.lastSeq)
		if !e.now().Before(deadline) {
			return e.enqueue(ctx, world.Message{RunID: runID}, key)
		}
		owner, err = e.acquireRunLease(ctx, runID)
		switch {
		case errors.Is(err, world.ErrLeaseHeld):
			// The holder took it after this session released it, so it
			// loads what arrived; what arrives later finds it held.
			return nil
		case err != nil:
			e.log.Warn("engine: take the run lease again", "run", runID, "err", err)
			return e.enqueue(ctx, world.Message{RunID: runID}, key)
		}
	}
}

// underLease runs session s (from the start when first, otherwise from
// where it stopped, see session.resume) under the lease owner holds and
// releases the lease. more reports that events arrived after the session
// last looked (afterRelease), so the run must go on.
func (e *Engine) underLease(ctx context.Context, s *session, owner string, first bool) (more bool, err error) {
	runID := s.runID
	stopRenew := e.keepLease(ctx, runID, owner)
	released, releaseErr := false, error(nil)
	release := func() {
		if released {
			return
		}
		released = true
		stopRenew()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if releaseErr = e.w.ReleaseRunLease(rctx, &world.RunLeaseParams{RunID: runID, Owner: owner}); releaseErr != nil {
			e.log.Warn("engine: release run lease", "run", runID, "err", releaseErr)
		}
	}
	defer release()
	s.lastPoll = e.now()
	if first {
		err = s.run(ctx)
	} else {
		err = s.resume(ctx)
	}
	if errors.Is(err, errMoved) {
		err = <-s.moved
	}
	if err != nil {
		return false, err // the message is retried: its continuation loads everything
	}
	s.close()
	release()
	return s.afterRelease(ctx, releaseErr)
}

// resume goes on with a session that ended and took the lease again: it
// loads what was appended since it last looked and replays its in-memory
// log into a new coroutine.
func (s *session) resume(ctx context.Context) error {
	if _, err := s.loadNew(ctx, false); err != nil {
		return err
	}
	if s.runStatus.Terminal() {
		s.e.afterTerminal(ctx, s.runID, s.meta.execCtx, true)
		return nil
	}
	s.rebuild()
	return s.loop(ctx)
}

// afterRelease is the lease holder's half of the background wake-up
// handshake (see Engine.wakeAfterStep): a background executor that commits a
// step's outcome while the run lease is held leaves the run to the holder,
// which, once it has released the lease, reads the log past what it has
// loaded and reports whether anything arrived (the run then goes on, see
// continueLeased).
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
// continuation after the holder is enough, as it loads everything.
func (e *Engine) bounce(ctx context.Context, msg world.Message, held error) error {
	now := e.now()
	var expires time.Time
	if lh := (*world.LeaseHeldError)(nil); errors.As(held, &lh) {
		expires = lh.ExpiresAt
	}
	delay, bucket := bounceDelay(now, e.cfg.LeaseRetryDelay, msg.Hop, expires)
	m := world.Message{RunID: msg.RunID, NotBefore: now.Add(delay), Hop: msg.Hop + 1, HoldAttempt: msg.HoldAttempt}
	return e.enqueue(ctx, m, keyBusy(msg.RunID, msg.HoldAttempt, msg.Hop+1, bucket))
}

// keepLease renews the run lease every third of its TTL until stopped.
func (e *Engine) keepLease(ctx context.Context, runID, owner string) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(max(e.cfg.RunLeaseTTL/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := e.w.RenewRunLease(ctx, &world.RunLeaseParams{RunID: runID, Owner: owner, TTL: e.cfg.RunLeaseTTL}); err != nil {
					e.log.Warn("engine: renew run lease", "run", runID, "err", err)
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

func (s *session) run(ctx context.Context) error {
	if _, err := s.loadNew(ctx, false); err != nil {
		return err
	}
	if s.log.len() == 0 {
		return &PermanentError{Reason: "run " + s.runID + " not found"}
	}
	if s.runStatus.Terminal() {
		s.e.afterTerminal(ctx, s.runID, s.meta.execCtx, true)
		return nil
	}
	wf, ok := s.e.reg.Workflow(s.meta.workflowName)
	if !ok {
		return s.failUnregistered(ctx)
	}
	s.wf = wf
	s.rebuild()
	s.readStepLeases(ctx)
	return s.loop(ctx)
}

// close stops the coroutine and any step still running.
func (s *session) close() {
	if s.r != nil {
		s.r.stop()
	}
	s.stopInflight(false)
}

// track updates what the session knows of the run from a committed event.
func (s *session) track(ev *world.Event) {
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		s.runStatus = world.RunStatusPending
		s.meta = runMeta{runID: ev.RunID, workflowName: d.WorkflowName, input: d.Input, execCtx: d.ExecutionContext, createdAt: ev.CreatedAt}
	case *world.RunStarted:
		s.runStatus = world.RunStatusRunning
		s.hold = nil
	case *world.RunHeld:
		s.runStatus = world.RunStatusHeld
		s.hold = &holdState{attempt: d.Attempt, code: d.ErrorCode, retryAt: d.RetryAt}
		if d.Error != nil {
			s.hold.message = d.Error.Message
		}
	case *world.RunCompleted:
		s.runStatus = world.RunStatusCompleted
	case *world.RunFailed:
		s.runStatus = world.RunStatusFailed
	case *world.RunCancelled:
		s.runStatus = world.RunStatusCancelled
	}
}

// loadNew reads the events appended since the session's last known one,
// optionally applying them to the replayer (allowed only with nothing
// uncommitted). The cold start reads forward, page by page; later loads read
// newest first back to the last known sequence number, so they cost what
// was appended since, however long the log.
func (s *session) loadNew(ctx context.Context, consume bool) (int, error) {
	if s.log.len() == 0 {
		return s.loadForward(ctx, consume)
	}
	var fresh []world.Event
	cursor, limit := "", 16
	for {
		page, err := s.e.w.ListEvents(ctx, &world.ListEventsParams{
			RunID: s.runID, Pagination: world.Pagination{Cursor: cursor, Limit: limit, Descending: true},
		})
		if err != nil {
			return 0, err
		}
		reached := false
		for _, ev := range page.Items {
			if ev.Seq <= s.lastSeq {
				reached = true
				break
			}
			fresh = append(fresh, ev)
		}
		if reached || !page.HasMore || len(page.Items) == 0 {
			break
		}
		cursor, limit = page.Cursor, world.MaxPageLimit
	}
	slices.Reverse(fresh)
	for i := range fresh {
		s.add(fresh[i], consume)
	}
	return len(fresh), nil
}

func (s *session) loadForward(ctx context.Context, consume bool) (int, error) {
	n := 0
	cursor := ""
	for {
		page, err := s.e.w.ListEvents(ctx, &world.ListEventsParams{
			RunID: s.runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit},
		})
		if err != nil {
			if errors.Is(err, world.ErrNotFound) && n == 0 {
				return 0, nil
			}
			return n, err
		}
		for _, ev := range page.Items {
			if ev.Seq > s.lastSeq {
				s.add(ev, consume)
				n++
			}
		}
		if page.Cursor != "" {
			cursor = page.Cursor
		}
		if !page.HasMore || len(page.Items) == 0 {
			return n, nil
		}
	}
}

// add appends a loaded event to the in-memory log.
func (s *session) add(ev world.Event, consume bool) {
	last := s.log.add(ev)
	s.lastSeq = ev.Seq
	s.track(last)
	if consume {
		s.r.noteAuthored(last)
		s.r.consume(last)
	}
}

// rebuild discards the coroutine and replays the in-memory log into a new
// one, then delivers the held (uncommitted) step outcomes again.
func (s *session) rebuild() {
	var said []uint64
	if s.r != nil {
		s.r.stop()
		said = s.r.said
	}
	s.r = newReplayer(s.wf, s.e.log)
	s.r.said = said
	runID, e := s.runID, s.e
	s.r.guard.report = func(d *world.ErrorData) { e.failForeign(runID, d) }
	s.log.each(s.r.noteAuthored)
	s.log.each(s.r.consume)
	s.applyStepLeases()
	held := s.held
	s.held, s.pending = nil, nil
	for _, o := range held {
		s.deliver(o)
	}
}

// refresh loads what other writers appended and rebuilds the workflow.
func (s *session) refresh(ctx context.Context) error {
	n, err := s.loadNew(ctx, false)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("engine: run %s: commit refused but no new events", s.runID)
	}
	s.e.log.Debug("engine: commit refused; rebuilding the workflow", "run", s.runID, "newEvents", n, "held", len(s.held))
	s.rebuild()
	return nil
}

// deliver applies an inline step outcome to the workflow before it is
// committed, and queues its event for the next commit.
func (s *session) deliver(o outcome) {
	op := s.r.byID[o.stepID]
	if op == nil || op.kind != opStep || op.settled {
		return // recorded by someone else meanwhile
	}
	if s.r.over() {
		s.late = append(s.late, o)
		return
	}
	s.pending = append(s.pending, o.event())
	s.held = append(s.held, o)
	switch o.kind {
	case outCompleted:
		s.r.deliverStep(op, o.result, nil)
	case outFailed:
		s.r.deliverStep(op, nil, o.failure)
	case outRetrying:
		s.r.retrying(op, o.retryAfter)
	}
}

// fireDueWaits completes the waits whose time has come, in time order.
func (s *session) fireDueWaits(now time.Time) {
	if len(s.r.openWaits) == 0 {
		return
	}
	for _, o := range s.schedule(now).dueWaits() {
		if s.r.over() {
			return
		}
		s.pending = append(s.pending, world.EventInput{CorrelationID: o.id, Data: &world.WaitCompleted{}})
		s.r.deliverWait(o)
	}
}

func (s *session) capacity() int {
	if s.draining {
		return 0
	}
	return max(0, s.e.cfg.InlineConcurrency-len(s.inflight))
}

func (s *session) loop(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := s.e.now()
		if !s.draining && !now.Before(s.deadline) {
			s.draining = true
		}
		if s.r.terminal != "" {
			return s.endForeign(ctx)
		}
		if s.r.diverged() {
			err := s.holdRun(ctx, now)
			var stale *staleError
			if errors.As(err, &stale) {
				if err := s.refresh(ctx); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if !s.r.finished && !s.r.failMisused() {
			s.fireDueWaits(now)
		}
		if err := s.flushDeferred(ctx, now, false); err != nil {
			return err
		}
		p := s.build(now)
		if len(p.events) > 0 {
			committed, err := s.commitPlan(ctx, p)
			var stale *staleError
			if errors.As(err, &stale) {
				if err := s.refresh(ctx); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if committed && p.terminal {
				s.recordLate(ctx, s.stopInflight(true)...)
				s.e.afterTerminal(ctx, s.runID, s.meta.execCtx, true)
				return nil
			}
			continue
		}
		if len(s.inflight) > 0 {
			if err := s.waitInflight(ctx); err != nil {
				return err
			}
			continue
		}
		done, err := s.idle(ctx, now)
		if err != nil || done {
			return err
		}
	}
}

// waitInflight waits for an inline step to finish, a timer to come due, the
// budget to run out or the next poll for other writers' events.
func (s *session) waitInflight(ctx context.Context) error {
	now := s.e.now()
	pollAt := s.lastPoll.Add(s.e.cfg.EventPollInterval)
	wake := wakeAt(pollAt, s.schedule(now).next(), s.deadline, s.draining)
	if s.solo != nil {
		if wake.After(now) {
			return s.runSolo(ctx, wake.Sub(now))
		}
		s.spawnSolo()
	}
	t := time.NewTimer(max(0, wake.Sub(now)))
	defer t.Stop()
	select {
	case o := <-s.results:
		s.receive(o)
		for {
			select {
			case o := <-s.results:
				s.receive(o)
				continue
			default:
			}
			break
		}
	case <-s.r.misused():
		// A foreign goroutine misused the workflow API: the loop fails the run.
	case <-t.C:
		if now := s.e.now(); !now.Before(pollAt) && len(s.pending) == 0 {
			s.lastPoll = now
			if _, err := s.loadNew(ctx, true); err != nil {
				return err
			}
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// runSolo runs the solo step, the only step in flight, on the session's own
// goroutine, where waitInflight would otherwise wait for it: a serial
// workflow then hands control between goroutines only at the coroutine's
// switches, with no goroutine per step and no thread woken to run one.
// The session still wakes when it must while the step runs: if the step is
// still running after wake, when waitInflight's timer would have fired (a
// timer due, the event poll, the deadline), the session carries on on a new
// goroutine, with the step in flight as if it had been spawned, and this
// goroutine delivers its outcome to s.results when it ends and returns
// errMoved. The session's final outcome then reaches continueRun through
// s.moved.
func (s *session) runSolo(ctx context.Context, wake time.Duration) error {
	step := s.solo
	s.solo = nil
	if s.moved == nil {
		s.moved = make(chan error, 1)
	}
	var state atomic.Int32   // soloRunning, soloMoved or soloDone
	state.Store(soloRunning) // publishes the session to the timer's goroutine
	t := time.AfterFunc(wake, func() {
		if !state.CompareAndSwap(soloRunning, soloMoved) {
			return // the step ended first
		}
		if err := s.loop(ctx); !errors.Is(err, errMoved) {
			s.moved <- err
		}
	})
	o := step()
	if state.CompareAndSwap(soloRunning, soloDone) {
		t.Stop()
		s.receive(o)
		return nil
	}
	s.results <- o
	return errMoved
}

// States of a solo step run by runSolo.
const (
	soloRunning int32 = iota
	soloMoved         // the session moved to the timer's goroutine
	soloDone          // the step ended on the session's goroutine
)

func (s *session) receive(o outcome) {
	if cancel := s.inflight[o.stepID]; cancel != nil {
		cancel()
		delete(s.inflight, o.stepID)
	}
	if o.kind == outAbandoned {
		return
	}
	s.deliver(o)
}

// idle handles a session with nothing running and nothing to commit: it
// lingers for a timer that is close, looks once more for events appended
// meanwhile, and otherwise schedules the continuation the run needs and
// ends the invocation.
func (s *session) idle(ctx context.Context, now time.Time) (done bool, err error) {
	next := s.schedule(now).next()
	if lingers(now, next, s.deadline, s.e.cfg.Linger, s.draining) {
		t := time.NewTimer(next.Sub(now))
		defer t.Stop()
		select {
		case <-t.C:
			return false, nil
		case <-s.r.misused():
			return false, nil
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	s.lastPoll = now
	n, err := s.loadNew(ctx, true)
	if err != nil || n > 0 {
		return false, err
	}
	if err := s.flushDeferred(ctx, now, true); err != nil {
		return true, err
	}
	s.r.retire() // the session ends below unless the workflow misused the API
	if s.r.failMisused() {
		return false, nil // the loop records the failure
	}
	switch {
	case s.draining && len(s.schedule(now).runnable()) > 0:
		// Out of budget with steps ready to run: a new invocation takes over.
		return true, s.e.enqueue(ctx, world.Message{RunID: s.runID}, keyBudget(s.runID, s.lastSeq))
	case !next.IsZero() && s.schedule(now).isLeaseCheck(next):
		return true, s.scheduleLeaseCheck(ctx, next)
	case !next.IsZero():
		return true, s.scheduleTimer(ctx, now, next)
	}
	return true, nil
}

// scheduleLeaseCheck enqueues the safety-net continuation for steps running
// under the lease of an attempt another invocation started inline (queued
// attempts need none, see nextTimer): it matters only if that invocation
// dies (a live one commits the outcome under the run lease), so it is rounded
// up to the next whole second and keyed by (run, that second). The
// continuations of one run that see leases expiring in the same second
// then send one message between them, not one each.
func (s *session) scheduleLeaseCheck(ctx context.Context, next time.Time) error {
	sec := leaseCheckAt(next)
	m := world.Message{RunID: s.runID, NotBefore: sec}
	return s.e.enqueue(ctx, m, keyLeaseCheck(s.runID, sec))
}

// scheduleTimer enqueues the continuation the soonest timer needs. When the
// timer is further off than the wake lead, the continuation is sent to
// arrive that much early: the new invocation takes the run lease, loads the
// log and rebuilds the workflow before the time, then lingers in process
// until it comes (idle), so the workflow resumes on time instead of after a
// queue receive, a lease, a load and a replay. An early continuation that
// cannot linger (it is out of budget) schedules the exact one, under another
// idempotency key. Under load, continuations arrive late anyway and do not
// linger.
func (s *session) scheduleTimer(ctx context.Context, now, next time.Time) error {
	at, early := timerSend(now, next, wakeLead(s.e.cfg.Linger))
	m := world.Message{RunID: s.runID, NotBefore: at}
	return s.e.enqueue(ctx, m, keyTimer(s.runID, next, early))
}

// flushDeferred queues the held-back steps whose time has come (all of them
// when the session is ending) that are still waiting to start.
func (s *session) flushDeferred(ctx context.Context, now time.Time, all bool) error {
	var due []*op
	for id, at := range s.deferred {
		if !all && now.Before(at) {
			continue
		}
		delete(s.deferred, id)
		o := s.r.byID[id]
		if o == nil || o.settled || s.inflight[id] != nil || o.status != world.StepStatusPending {
			continue
		}
		due = append(due, o)
	}
	sort.Slice(due, func(i, j int) bool { return due[i].index < due[j].index })
	return s.enqueueSteps(ctx, due)
}

// endForeign ends a session whose run another writer finished (a
// cancellation): held and running step results are recorded as the World
// allows, and the terminal side effects run.
func (s *session) endForeign(ctx context.Context) error {
	held := s.held
	s.held, s.pending = nil, nil
	for _, o := range held {
		if o.kind != outRetrying {
			s.recordLate(ctx, o)
		}
	}
	s.recordLate(ctx, s.stopInflight(true)...)
	s.e.afterTerminal(ctx, s.runID, s.meta.execCtx, true)
	return nil
}

// stopInflight cancels the steps still running and waits for them. When
// keep is set, it returns the results they produced anyway, with those that
// arrived after the workflow finished (late), for the caller to record
// (recordLate); otherwise it drops them.
func (s *session) stopInflight(keep bool) []outcome {
	s.spawnSolo()
	for _, cancel := range s.inflight {
		cancel()
	}
	for len(s.inflight) > 0 {
		o := <-s.results
		delete(s.inflight, o.stepID)
		if keep && (o.kind == outCompleted || o.kind == outFailed) {
			s.late = append(s.late, o)
		}
	}
	late := s.late
	s.late = nil
	if !keep {
		return nil
	}
	return late
}

// recordLate records step outcomes the session could not commit with the
// run (it ended), as the World allows, even when ctx is done.
func (s *session) recordLate(ctx context.Context, outs ...outcome) {
	for _, o := range outs {
		if err := s.e.record(context.WithoutCancel(ctx), s.runID, o); err != nil {
			s.e.log.Warn("engine: record step result after run end", "run", s.runID, "step", o.stepID, "err", err)
		}
	}
}

// failUnregistered fails a run whose workflow this engine does not know.
func (s *session) failUnregistered(ctx context.Context) error {
	data := &world.ErrorData{Type: TypeNotRegistered, Message: fmt.Sprintf(workflowNotRegistedFmt, s.meta.workflowName)}
	for try := 0; try < 5; try++ {
		_, err := s.e.w.Append(ctx, &world.AppendParams{RunID: s.runID, IfLastSeq: s.lastSeq, Events: []world.EventInput{
			{Data: &world.RunFailed{Error: data, ErrorCode: world.CodeRuntimeError}},
		}})
		if err == nil {
			s.e.log.Warn("engine: run failed: workflow not registered", "run", s.runID, "workflow", s.meta.workflowName)
			s.e.afterTerminal(ctx, s.runID, s.meta.execCtx, true)
			return nil
		}
		if !errors.Is(err, world.ErrConflict) {
			return err
		}
		if _, err := s.loadNew(ctx, false); err != nil {
			return err
		}
		if s.runStatus.Terminal() {
			return nil
		}
	}
	return fmt.Errorf("engine: run %s: could not record that its workflow is not registered", s.runID)
}
