package engine

import (
	"context"
	"sort"
	"time"

	"github.com/skeinflow/skein/world"
)

// The scheduler decides, from a session's state at one instant, what runs
// next and when the session must wake. Everything in this file is pure:
// state in, decision out, no I/O and no clock (scheduler_test.go tables
// them). The session's loop (session.go) gathers the state, asks, and acts.

// schedule is the scheduler's view of a session at the instant now: the
// run's open steps and waits as the session knows them, and what the
// session itself is doing with its steps.
type schedule struct {
	now      time.Time
	steps    map[string]*op                // created, unsettled steps
	waits    map[string]*op                // created, unsettled waits
	comps    map[string]*op                // steps whose compensation was asked for, not ended
	deferred map[string]time.Time          // excess steps held back, until when
	holds    map[time.Time]int             // deferred's times, when counted (inflight.deferTimes)
	inflight map[string]context.CancelFunc // steps running in this session
	queued   map[string]bool               // steps this session queued
	order    *stepOrder                    // steps in creation order; nil: none kept
}

// schedule returns the session's state as the scheduler sees it at now.
func (in *inflight) schedule(now time.Time) schedule {
	r := in.run.replay()
	return schedule{now: now, steps: r.openSteps, waits: r.openWaits, comps: r.openComps, deferred: in.deferred, holds: in.deferTimes, inflight: in.running, queued: in.queued, order: &r.stepOrder}
}

func (sc schedule) running(id string) bool {
	_, ok := sc.inflight[id]
	return ok
}

// leaseTimer returns when the session checks on step o's lease, held by an
// attempt another invocation started inline: leaseCheckSlack past its
// expiry. ok is false when o is not running under a live lease.
func (sc schedule) leaseTimer(o *op) (at time.Time, ok bool) {
	if o.status != world.StepStatusRunning || !o.leaseUntil.After(sc.now) {
		return time.Time{}, false
	}
	return o.leaseUntil.Add(leaseCheckSlack), true
}

// retryTimer returns when step o's retry comes due; ok is false when o is
// not waiting for one.
func (sc schedule) retryTimer(o *op) (at time.Time, ok bool) {
	if o.status != world.StepStatusPending || !o.retryAfter.After(sc.now) {
		return time.Time{}, false
	}
	return o.retryAfter, true
}

// next returns the soonest time something becomes due: a wait, a held-back
// step, a step's retry, or the check on another executor's step lease
// (leaseTimer). Zero when nothing is timed. The lease of a queued attempt
// (one a background executor started for its queue message) is no timer:
// if its executor dies, the message comes back and runs the step again,
// and a live one wakes the run when it finishes (background.wakeAfterStep).
// Nor is the retry of a queued attempt: its executor queued the step again
// for that time.
func (sc schedule) next() time.Time {
	var next time.Time
	consider := func(t time.Time, ok bool) {
		if ok && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, o := range sc.waits {
		consider(o.resumeAt, true)
	}
	sc.eachHold(func(at time.Time) { consider(at, true) })
	sc.eachTimed(func(o *op) {
		if o.queued {
			return
		}
		retry, retries := sc.retryTimer(o)
		lease, leased := sc.leaseTimer(o)
		if (retries || leased) && !sc.running(o.id) {
			consider(retry, retries)
			consider(lease, leased)
		}
	})
	for id, o := range sc.comps {
		if !sc.running(id) {
			consider(sc.compTimer(o))
		}
	}
	return next
}

// eachHold calls f with each time a step is held back until: from the
// counts of the times (a few: a commit holds back its excess until one
// time) when sc has them, else from each step held back.
func (sc schedule) eachHold(f func(time.Time)) {
	if sc.holds != nil {
		for at := range sc.holds {
			f(at)
		}
		return
	}
	for _, at := range sc.deferred {
		f(at)
	}
}

// eachTimed calls f with each open step that may have a timer (see
// stepOrder.timed), dropping from sc.order those settled or queued (a
// step's timer is set again, and noted, before it can have one). Without
// an order (a table test's schedule), f sees every open step. Each turn of
// a session asks next, and a wide fan-out's thousands of steps queued to
// background executors stay open until their outcomes are loaded.
func (sc schedule) eachTimed(f func(*op)) {
	so := sc.order
	if so == nil {
		for _, o := range sc.steps {
			f(o)
		}
		return
	}
	kept := so.timed[:0]
	for _, o := range so.timed {
		so.walked++
		if o.settled || o.queued {
			o.timed = false
			continue
		}
		kept = append(kept, o)
		if sc.steps[o.id] == o {
			f(o)
		}
	}
	clear(so.timed[len(kept):])
	so.timed = kept
}

// isLeaseCheck reports whether the timer at (from next) is only the check
// on another executor's step lease, not a wait, a held-back step or a
// retry, which need a continuation on time (scheduleTimer) where a lease
// check can be late (scheduleLeaseCheck).
func (sc schedule) isLeaseCheck(at time.Time) bool {
	for _, o := range sc.waits {
		if o.resumeAt.Equal(at) {
			return false
		}
	}
	held := false
	sc.eachHold(func(t time.Time) { held = held || t.Equal(at) })
	if held {
		return false
	}
	lease := false
	for id, o := range sc.steps {
		if sc.running(id) {
			continue
		}
		if t, ok := sc.retryTimer(o); ok && t.Equal(at) {
			return false
		}
		if t, ok := sc.leaseTimer(o); ok && t.Equal(at) {
			lease = true
		}
	}
	for id, o := range sc.comps {
		if t, ok := sc.compTimer(o); ok && !sc.running(id) && t.Equal(at) {
			return false
		}
	}
	return lease
}

// runnable returns the created, unsettled steps the session may start, in
// the order the code created them: pending and due, or running under an
// expired lease; not already running here nor queued by this session.
func (sc schedule) runnable() []*op { return sc.firstRunnable(-1) }

// firstRunnable returns the first n steps runnable returns (all of them
// when n is negative), without sorting the others: a session that may
// start a few steps of a wide fan-out's thousands asks at every commit.
func (sc schedule) firstRunnable(n int) []*op {
	if n > 0 && sc.order.usable(len(sc.steps)) {
		return sc.order.first(n, func(o *op) bool { return sc.mayStart(o.id, o) })
	}
	var out []*op
	byIndex := func() { sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index }) }
	for id, o := range sc.steps {
		sc.order.look()
		switch {
		case n == 0 || !sc.mayStart(id, o):
		case n < 0 || len(out) < n-1:
			out = append(out, o)
		case len(out) == n-1:
			out = append(out, o)
			byIndex() // full: kept in order from now on
		case o.index < out[n-1].index:
			i := sort.Search(n, func(i int) bool { return out[i].index > o.index })
			copy(out[i+1:], out[i:n-1])
			out[i] = o
		}
	}
	byIndex()
	return out
}

// mayStart reports whether the session may start step o (id) now:
// pending and due, or running under an expired lease; not running here
// nor queued by this session.
func (sc schedule) mayStart(id string, o *op) bool {
	if sc.running(id) || sc.queued[id] {
		return false
	}
	switch o.status {
	case world.StepStatusPending:
		return !o.retryAfter.After(sc.now)
	case world.StepStatusRunning:
		return !o.leaseUntil.After(sc.now)
	}
	return false
}

// compTimer returns when the compensation of step o can start again: its
// retry's time, or just past the lease of an attempt another invocation
// runs. ok is false when it can start now or has ended.
func (sc schedule) compTimer(o *op) (at time.Time, ok bool) {
	c := o.comp
	switch {
	case c == nil || c.settled:
		return time.Time{}, false
	case c.running && c.leaseUntil.After(sc.now):
		return c.leaseUntil.Add(leaseCheckSlack), true
	case !c.running && c.retryAfter.After(sc.now):
		return c.retryAfter, true
	}
	return time.Time{}, false
}

// runnableComps returns the compensations the session may start now, in
// the order the code asked for them: not started, due for a retry, or
// running under an expired lease; not running here.
func (sc schedule) runnableComps() []*op {
	var out []*op
	for id, o := range sc.comps {
		if sc.running(id) || o.comp.settled {
			continue
		}
		if _, later := sc.compTimer(o); later {
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].comp.wanted < out[j].comp.wanted || out[i].comp.wanted == out[j].comp.wanted && out[i].index < out[j].index
	})
	return out
}

// dueWaits returns the waits whose time has come, in time order (creation
// order for equal times).
func (sc schedule) dueWaits() []*op {
	var due []*op
	for _, o := range sc.waits {
		if !o.resumeAt.After(sc.now) {
			due = append(due, o)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].resumeAt.Equal(due[j].resumeAt) {
			return due[i].resumeAt.Before(due[j].resumeAt)
		}
		return due[i].index < due[j].index
	})
	return due
}

// idleEnd is how an idle session that found nothing new ends.
type idleEnd int

const (
	endQuiet      idleEnd = iota // nothing timed: the next message comes from elsewhere
	endBudget                    // out of budget with steps ready: a continuation now
	endLeaseCheck                // only another invocation's step lease: a lease check
	endTimer                     // a wait, a retry or a held-back step: its timer's continuation
)

// idleEnding decides how an idle session ends, given its next timer (zero:
// none, from next before it queued its held-back steps) and whether it is
// draining.
func (sc schedule) idleEnding(next time.Time, draining bool) idleEnd {
	switch {
	case draining && (len(sc.firstRunnable(1)) > 0 || len(sc.runnableComps()) > 0):
		return endBudget
	case next.IsZero():
		return endQuiet
	case sc.isLeaseCheck(next):
		return endLeaseCheck
	}
	return endTimer
}

// wakeAt returns when a session with steps in flight must wake if none
// ends first: the soonest of the next event poll, the next timer (zero:
// none) and, unless it is draining already, its deadline.
func wakeAt(pollAt, next, deadline time.Time, draining bool) time.Time {
	wake := pollAt
	if !next.IsZero() && next.Before(wake) {
		wake = next
	}
	if !draining && deadline.Before(wake) {
		wake = deadline
	}
	return wake
}

// lingers reports whether an idle session waits in process for its next
// timer (zero: none) rather than end: when it is not draining, the timer
// is within linger and before the deadline.
func lingers(now, next, deadline time.Time, linger time.Duration, draining bool) bool {
	return !draining && !next.IsZero() && linger > 0 && next.Sub(now) <= linger && next.Before(deadline)
}

// wakeLead is how early the continuation of a timer is sent: linger, up to
// maxWakeLead; none when lingering is disabled.
func wakeLead(linger time.Duration) time.Duration {
	if linger <= 0 {
		return 0
	}
	return min(linger, maxWakeLead)
}

// timerSend returns when the continuation for the timer next is to arrive,
// and whether that is early: lead before next when next is further off
// than lead (see scheduleTimer), otherwise next itself.
func timerSend(now, next time.Time, lead time.Duration) (at time.Time, early bool) {
	if lead > 0 && next.Sub(now) > lead {
		return next.Add(-lead), true
	}
	return next, false
}

// leaseCheckAt rounds the lease check next up to the next whole
// leaseCheckRound (see scheduleLeaseCheck).
func leaseCheckAt(next time.Time) time.Time {
	sec := next.Truncate(leaseCheckRound)
	if sec.Before(next) {
		sec = sec.Add(leaseCheckRound)
	}
	return sec
}

// bounceDelay returns how long a continuation that found the run lease
// held waits before it tries again, as its hop-th bounce, and the delay
// window it falls in (bounces in one window share a key): base doubling
// with each hop (up to 64 times), but never past the holder's lease
// expiry (zero: unknown) plus expirySlack, nor below base.
func bounceDelay(now time.Time, base time.Duration, hop int, expires time.Time) (delay time.Duration, bucket int64) {
	delay = base << min(hop, 6)
	if !expires.IsZero() {
		if until := expires.Sub(now) + expirySlack; until > 0 && until < delay {
			delay = max(until, base)
		}
	}
	return delay, now.UnixMilli() / max(1, delay.Milliseconds())
}
