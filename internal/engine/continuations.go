package engine

// The messages a session sends: the continuation its next timer, a lease
// check or its budget needs when it ends (idle), and the queue messages of
// steps it cannot run inline (enqueueSteps).

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

// idle handles a session with nothing running and nothing to commit: it
// lingers for a timer that is close, looks once more for events appended
// meanwhile, and otherwise schedules the continuation the run needs and
// ends the invocation.
func (in *inflight) idle(ctx context.Context, now time.Time) (done bool, err error) {
	// The timers of all the open steps, not only of those noted as having
	// one (stepOrder.timed): the message the session leaves depends on
	// them, and an idle session asks once.
	sc := in.schedule(now)
	sc.order = nil
	next := sc.next()
	if lingers(now, next, in.run.stopsAt(), in.e.cfg.Linger, in.run.draining()) {
		t := time.NewTimer(next.Sub(now))
		defer t.Stop()
		select {
		case <-t.C:
			return false, nil
		case <-in.run.replay().misused():
			return false, nil
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	in.lastPoll = now
	n, err := in.run.loadNew(ctx, true)
	if err != nil || n > 0 {
		return false, err
	}
	if err := in.flushDeferred(ctx, now, true); err != nil {
		return true, err
	}
	in.run.replay().retire() // the session ends below unless the workflow misused the API
	if in.run.replay().failMisused() {
		return false, nil // the loop records the failure
	}
	switch in.schedule(now).idleEnding(next, in.run.draining()) {
	case endBudget:
		// Out of budget with steps ready to run: a new invocation takes over.
		return true, in.e.enqueue(ctx, world.Message{RunID: in.runID}, keyBudget(in.runID, in.st.lastSeq))
	case endLeaseCheck:
		return true, in.scheduleLeaseCheck(ctx, next)
	case endTimer:
		return true, in.scheduleTimer(ctx, now, next)
	}
	return true, nil
}

// scheduleLeaseCheck enqueues the safety-net continuation for steps running
// under the lease of an attempt another invocation started inline (queued
// attempts need none, see schedule.next): it matters only if that invocation
// dies (a live one commits the outcome under the run lease), so it is rounded
// up to the next whole second and keyed by (run, that second). The
// continuations of one run that see leases expiring in the same second
// then send one message between them, not one each.
func (in *inflight) scheduleLeaseCheck(ctx context.Context, next time.Time) error {
	sec := leaseCheckAt(next)
	m := world.Message{RunID: in.runID, NotBefore: sec}
	return in.e.enqueue(ctx, m, keyLeaseCheck(in.runID, sec))
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
func (in *inflight) scheduleTimer(ctx context.Context, now, next time.Time) error {
	at, early := timerSend(now, next, wakeLead(in.e.cfg.Linger))
	m := world.Message{RunID: in.runID, NotBefore: at}
	return in.e.enqueue(ctx, m, keyTimer(in.runID, next, early))
}

// flushDeferred queues the held-back steps whose time has come (all of them
// when the session is ending) that are still waiting to start. It looks
// at them only once one of their times has come (deferTimes): each turn
// of a session asks, and a wide fan-out holds back thousands of steps at
// once.
func (in *inflight) flushDeferred(ctx context.Context, now time.Time, all bool) error {
	if !all && !in.deferDue(now) {
		return nil
	}
	var due []*op
	for id, at := range in.deferred {
		in.deferLooked++
		if !all && now.Before(at) {
			continue
		}
		in.unhold(id)
		o := in.run.replay().byID[id]
		if o == nil || o.settled || in.running[id] != nil || o.status != world.StepStatusPending {
			continue
		}
		due = append(due, o)
	}
	sort.Slice(due, func(i, j int) bool { return due[i].index < due[j].index })
	return in.enqueueSteps(ctx, due)
}

// holdBack holds step id back until until (deferred, deferTimes).
func (in *inflight) holdBack(id string, until time.Time) {
	in.unhold(id)
	in.deferred[id] = until
	in.deferTimes[until]++
}

// unhold stops holding step id back, if it is.
func (in *inflight) unhold(id string) {
	at, ok := in.deferred[id]
	if !ok {
		return
	}
	delete(in.deferred, id)
	if in.deferTimes[at] <= 1 {
		delete(in.deferTimes, at)
	} else {
		in.deferTimes[at]--
	}
}

// deferDue reports whether a step held back is due at now.
func (in *inflight) deferDue(now time.Time) bool {
	for at := range in.deferTimes {
		if !now.Before(at) {
			return true
		}
	}
	return false
}

// enqueueSteps queues steps for background executors, as few messages as
// the inline concurrency allows: ceil(len/InlineConcurrency) messages of
// about equal size, each naming its first step in StepID (what an engine
// that predates StepIDs executes; its continuation then starts the rest)
// and the others in StepIDs. A background executor runs a message's steps
// concurrently, as an invocation runs its inline steps. The messages are
// sent enqueueConcurrency at a time: a wide fan-out's hundreds of messages
// (each a claim, a send and a confirmation on SQS) one after the other
// would take seconds.
func (in *inflight) enqueueSteps(ctx context.Context, ops []*op) error {
	if len(ops) == 0 {
		return nil
	}
	per := max(in.e.cfg.InlineConcurrency, 1)
	n := (len(ops) + per - 1) / per
	msgs := make([]world.Message, n)
	keys := make([]string, n)
	for i := range n {
		chunk := ops[i*len(ops)/n : (i+1)*len(ops)/n]
		first := chunk[0]
		msgs[i] = world.Message{RunID: in.runID, StepID: first.id}
		keys[i] = keyStep(first.id, first.attempt)
		if len(chunk) > 1 {
			msgs[i].StepIDs = make([]string, 0, len(chunk)-1)
			for _, o := range chunk[1:] {
				msgs[i].StepIDs = append(msgs[i].StepIDs, o.id)
			}
			keys[i] = keySteps(first.id, first.attempt, len(chunk))
		}
		for _, o := range chunk {
			in.queued[o.id] = true
		}
	}
	errs := make([]error, n)
	sem := make(chan struct{}, enqueueConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = in.e.enqueue(ctx, msgs[i], keys[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// enqueueConcurrency bounds the messages one enqueueSteps sends at once.
const enqueueConcurrency = 8
