package engine

// The session: one invocation's continuation of a run under its lease, and
// its loop. Loading and priming are in load.go, the decisions of what runs
// next and when to wake in scheduler.go, running steps inline in inline.go,
// commits in commit.go, the messages a session sends in continuations.go,
// and taking and giving back the run lease in runlease.go.

import (
	"context"
	"errors"
	"time"

	"github.com/skeinflow/skein/world"
)

// session is one invocation's continuation of a run, under the run lease.
// Its state is grouped by who owns it: runState is what it has loaded and
// committed (load.go), committer what it has yet to commit (commit.go),
// inflight the steps it runs or hands on (inline.go); the scheduler reads
// them (schedule). The session keeps the replay, the deadline and the
// loop, and passes itself down to its committer and inflight as the
// narrow views they ask it through (commitRun, commitSteps, inflightRun).
type session struct {
	e     *parts
	runID string

	runSpan // the session's span (trace.go)

	runState

	wf    *Workflow
	r     *replayer
	watch *sliceWatch // shared with the goroutine watching the session (stuck.go)

	committer // the session's commits: pending, held (commit.go)

	inflight // the steps it runs here or hands on (inline.go)

	deadline time.Time // when the session stops starting work (port.budget)
	drains   bool      // past the deadline

	registeredOpen openCheck // see missingStep
}

// newSession returns the session of runID for a message that retries hold
// attempt retry, which stops starting work at deadline; its committer
// asks the session for its replay and its inline steps (commitRun,
// commitSteps).
func newSession(e *parts, runID string, retry int, deadline time.Time, w *sliceWatch) *session {
	s := &session{
		e: e, runID: runID, runSpan: runSpan{began: time.Now()}, watch: w,
		inflight: inflight{e: e, runID: runID,
			inlineSteps: inlineSteps{
				running: make(map[string]context.CancelFunc),
				comping: make(map[string]bool),
				results: make(chan outcome, max(e.cfg.InlineConcurrency, 1)),
			},
			queued:     make(map[string]bool),
			deferred:   make(map[string]time.Time),
			deferTimes: make(map[time.Time]int),
		},
		deadline: deadline,
	}
	s.committer = committer{e: e, runID: runID, retryAttempt: retry}
	s.committer.st, s.committer.run, s.committer.steps = &s.runState, s, s
	s.inflight.st, s.inflight.span, s.inflight.run = &s.runState, &s.runSpan, s
	return s
}

// uncommitted reports whether deliveries wait for the next commit
// (inflightRun).
func (s *session) uncommitted() bool { return len(s.pending) > 0 }

// stopsAt is when the session stops starting work (inflightRun).
func (s *session) stopsAt() time.Time { return s.deadline }

// draining reports whether the session is past its deadline (inflightRun).
func (s *session) draining() bool { return s.drains }

// replay is the session's current replayer (commitRun).
func (s *session) replay() *replayer { return s.r }

// queue hands the steps a commit created beyond inline capacity to
// background executors: held back for cfg.BackgroundDelay when set
// (flushDeferred), else enqueued now (commitSteps).
func (in *inflight) queue(ctx context.Context, ops []*op) error {
	if d := in.e.cfg.BackgroundDelay; d > 0 {
		until := in.e.now().Add(d)
		for _, o := range ops {
			in.holdBack(o.id, until)
		}
		return nil
	}
	return in.enqueueSteps(ctx, ops)
}

// errMoved ends a session loop whose session carries on on another
// goroutine, which delivers the outcome to session.moved.
var errMoved = errors.New("engine: session moved to another goroutine")

// staleError reports a commit refused because the run changed underneath.
type staleError struct{ err error }

func (e *staleError) Error() string { return "engine: stale commit: " + e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// deliver applies an inline step outcome to the workflow before it is
// committed, and queues its event for the next commit.
func (s *session) deliver(o outcome) {
	if o.comp {
		s.deliverComp(o)
		return
	}
	op := s.r.byID[o.stepID]
	if op == nil || op.kind != opStep || op.settled {
		return // recorded by someone else meanwhile
	}
	if s.r.over() {
		s.late = append(s.late, o)
		return
	}
	if len(s.held) == 0 {
		s.heldSince = s.r.slices
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

// capacity is how many more steps the session may start inline now: none
// once it drains.
func (in *inflight) capacity() int {
	if in.run.draining() {
		return 0
	}
	return max(0, in.e.cfg.InlineConcurrency-len(in.running))
}

// loop runs the session until it ends (steps 3 to 7 of the life of a
// delivery in the package doc): each turn it looks at the run, commits what
// the workflow's suspension needs, and otherwise waits for its inline steps
// or, with none, is idle. A refused commit reads what was appended, takes
// it into the workflow (refresh) and turns again. errMoved means the loop
// goes on on another goroutine (runSolo).
func (s *session) loop(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := s.e.now()
		if !s.drains && !now.Before(s.deadline) {
			s.drains = true
		}
		if s.r.terminal != "" {
			return s.endForeign(ctx)
		}
		if s.r.held() {
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
		if o := s.missingStep(now); o != nil {
			s.r.holdMissing(o) // held on the next turn
			continue
		}
		acted, end, err := s.commitTurn(ctx, now)
		if isStale(err) {
			if err := s.refresh(ctx); err != nil {
				return err
			}
			continue
		}
		if end {
			return err
		}
		if acted {
			continue
		}
		if len(s.running) > 0 {
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

// commitTurn commits what the workflow's suspension needs (build), or
// fails the run when it passes a limit (failOverLimit). acted reports
// that there was something to commit, end that the session is over (with
// err); a *staleError means the run changed underneath.
func (s *session) commitTurn(ctx context.Context, now time.Time) (acted, end bool, err error) {
	if le := s.overLimit(); le != nil {
		return true, true, s.failOverLimit(ctx, le)
	}
	p := s.build(now)
	if len(p.events) == 0 {
		return false, false, nil
	}
	committed, err := s.commitPlan(ctx, p)
	if le := limitRefusal(err); le != nil {
		return true, true, s.failOverLimit(ctx, le)
	}
	if err != nil {
		return true, !isStale(err), err
	}
	if committed && p.terminal {
		return true, true, s.rest(ctx, false, p.deactivated)
	}
	return true, false, nil
}

// waitInflight waits for an inline step to finish, a timer to come due, the
// budget to run out or the next poll for other writers' events.
func (in *inflight) waitInflight(ctx context.Context) error {
	now := in.e.now()
	pollAt := in.lastPoll.Add(in.e.cfg.EventPollInterval)
	wake := wakeAt(pollAt, in.schedule(now).next(), in.run.stopsAt(), in.run.draining())
	if in.solo != nil {
		if wake.After(now) {
			return in.runSolo(ctx, wake.Sub(now))
		}
		in.spawnSolo()
	}
	t := time.NewTimer(max(0, wake.Sub(now)))
	defer t.Stop()
	select {
	case o := <-in.results:
		in.receive(o)
		for {
			select {
			case o := <-in.results:
				in.receive(o)
				continue
			default:
			}
			break
		}
	case <-in.run.replay().misused():
		// A foreign goroutine misused the workflow API: the loop fails the run.
	case <-t.C:
		if now := in.e.now(); !now.Before(pollAt) && !in.run.uncommitted() {
			in.lastPoll = now
			if _, err := in.run.loadNew(ctx, true); err != nil {
				return err
			}
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// endForeign ends a session whose run another writer finished (a
// cancellation): held and running step results are recorded as the World
// allows, and the terminal side effects run.
func (s *session) endForeign(ctx context.Context) error {
	held := s.held
	s.held, s.pending = nil, nil
	s.recordLate(ctx, held...)
	return s.rest(ctx, s.r.terminal == world.RunStatusCancelled, false)
}

// stopInflight cancels the steps still running and waits for them. When
// keep is set, it returns the results they produced anyway, with those that
// arrived after the workflow finished (late), for the caller to record
// (recordLate); otherwise it drops them.
func (in *inflight) stopInflight(keep bool) []outcome {
	in.spawnSolo()
	for _, cancel := range in.running {
		cancel()
	}
	for len(in.running) > 0 {
		o := <-in.results
		delete(in.running, o.stepID)
		delete(in.comping, o.stepID)
		if keep && (o.kind == outCompleted || o.kind == outFailed || o.comp && o.kind == outRetrying) {
			in.late = append(in.late, o)
		}
	}
	late := in.late
	in.late = nil
	if !keep {
		return nil
	}
	return late
}

// recordLate records step outcomes the session could not commit with the
// run (it ended), as the World allows, even when ctx is done.
func (s *session) recordLate(ctx context.Context, outs ...outcome) {
	for _, o := range outs {
		if err := s.e.rest.recordAfterEnd(context.WithoutCancel(ctx), s.runID, o); err != nil {
			s.e.log.Warn("engine: step result not recorded: "+lateReason(err, s.runStatus), "run", s.runID, "step", o.stepID, "err", err)
		}
	}
}

// lateReason says why recordLate could not record a step's result, in the
// run's terms: a session that lost the run's lease (another executor runs
// it, the step runs again there) is not a run that ended, and a refusal
// because the run's stored data is damaged (world.ErrCorrupt) says so.
func lateReason(err error, status world.RunStatus) string {
	switch {
	case errors.Is(err, world.ErrLeaseLost):
		return "this executor lost the run's lease (another executor has the run; the step runs again there)"
	case errors.Is(err, world.ErrCorrupt):
		return "the run's stored data is damaged, so nothing was written (restore the missing items, then wake the run)"
	case status.Terminal():
		return "the run has ended (" + string(status) + ")"
	case status == world.RunStatusHeld:
		return "the run is held"
	}
	return "the World refused it"
}
