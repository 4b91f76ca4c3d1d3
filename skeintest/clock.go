package skeintest

import (
	"context"
	"sync"
	"time"

	"github.com/skeinflow/skein/localworld"
)

// The virtual clock and what moves it.
//
// Durable time in Skein lives in the queue: a sleep, a retry's backoff, a
// held run's next replay and every other timer become a queue message that
// is not visible before its time. The engine's own real timers (a step's
// lease renewal, the poll for events while steps run) only pace work that is
// in flight, and the kit turns off the one that waits for a timer in
// process (EngineOptions.Linger).
//
// So the environment is *settled* when every receiver of the Worker is
// waiting in Receive (no message is being handled, hence no workflow or step
// runs) and no message is visible at the virtual now: nothing can happen
// until the clock moves or the test acts. At a settled point the driver
// first lets the checks registered by WaitSuspended and Settle look at the
// world, then moves the clock: towards a pending Advance's target, one due
// message at a time, and, in automatic time, to the next message's time.

// driver owns the virtual clock and decides when it moves.
type driver struct {
	lw      *localworld.World
	auto    bool
	workers int // the Worker's receivers

	mu       sync.Mutex
	now      time.Time
	idle     int           // receivers waiting with nothing visible
	clockCh  chan struct{} // closed and replaced when the clock moves
	progress chan struct{} // closed and replaced at every change (idle, clock, settle)
	kick     chan struct{} // wakes the driver loop (buffered, 1)
	checks   []*settleCheck
	advances []*advance
	settles  uint64 // settled points seen
}

// settleCheck runs at settled points until it reports done.
type settleCheck struct {
	fn   func(ctx context.Context) bool
	done chan struct{}
}

// advance is a pending Advance: the clock is to reach target.
type advance struct {
	target time.Time
	done   chan struct{}
}

func newDriver(lw *localworld.World, start time.Time, auto bool, workers int) *driver {
	return &driver{
		lw: lw, auto: auto, workers: workers, now: start,
		clockCh: make(chan struct{}), progress: make(chan struct{}), kick: make(chan struct{}, 1),
	}
}

// Now is the virtual clock.
func (d *driver) Now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.now
}

// changedLocked wakes the driver and everything waiting for progress; mu is
// held.
func (d *driver) changedLocked() {
	close(d.progress)
	d.progress = make(chan struct{})
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// progressed returns a channel closed at the next change.
func (d *driver) progressed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.progress
}

// clockMoved returns a channel closed when the clock next moves.
func (d *driver) clockMoved() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.clockCh
}

// enterIdle and leaveIdle bracket a receiver's wait with nothing visible.
func (d *driver) enterIdle() {
	d.mu.Lock()
	d.idle++
	d.changedLocked()
	d.mu.Unlock()
}

func (d *driver) leaveIdle() {
	d.mu.Lock()
	d.idle--
	d.mu.Unlock()
}

// handled records that a receiver came back for more: the message it had
// (if any) has been handled.
func (d *driver) handled() {
	d.mu.Lock()
	d.changedLocked()
	d.mu.Unlock()
}

// setLocked moves the clock to t (never back); mu is held.
func (d *driver) setLocked(t time.Time) {
	if !t.After(d.now) {
		return
	}
	d.now = t
	close(d.clockCh)
	d.clockCh = make(chan struct{})
	d.changedLocked()
}

// addCheck registers fn to run at settled points until it returns true, and
// returns a channel closed then.
func (d *driver) addCheck(fn func(ctx context.Context) bool) *settleCheck {
	c := &settleCheck{fn: fn, done: make(chan struct{})}
	d.mu.Lock()
	d.checks = append(d.checks, c)
	d.changedLocked()
	d.mu.Unlock()
	return c
}

// dropCheck unregisters c (a waiter that gave up).
func (d *driver) dropCheck(c *settleCheck) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, x := range d.checks {
		if x == c {
			d.checks = append(d.checks[:i], d.checks[i+1:]...)
			return
		}
	}
}

// addAdvance registers a move of the clock by by and returns its request.
func (d *driver) addAdvance(by time.Duration) *advance {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := &advance{target: d.now.Add(by), done: make(chan struct{})}
	d.advances = append(d.advances, a)
	d.changedLocked()
	return a
}

// run drives the clock until ctx is done.
func (d *driver) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		}
		d.step(ctx)
	}
}

// step acts on one settled point, if the environment is settled.
func (d *driver) step(ctx context.Context) {
	if !d.allIdle() {
		return
	}
	next, _, err := d.lw.NextVisible(ctx)
	if err != nil {
		return // closed: the environment is shutting down
	}
	now := d.Now()
	if !next.IsZero() && !next.After(now) {
		return // a receiver is waking for it
	}
	d.mu.Lock()
	d.settles++
	checks := append([]*settleCheck(nil), d.checks...)
	d.mu.Unlock()
	for _, c := range checks {
		if c.fn(ctx) {
			d.dropCheck(c)
			close(c.done)
		}
	}
	if !d.allIdle() || !d.Now().Equal(now) {
		return // a check (or the test) changed something: look again later
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var pending []*advance
	target := time.Time{}
	for _, a := range d.advances {
		if !a.target.After(d.now) {
			close(a.done)
			continue
		}
		pending = append(pending, a)
		if target.IsZero() || a.target.Before(target) {
			target = a.target
		}
	}
	d.advances = pending
	switch {
	case !target.IsZero() && (next.IsZero() || next.After(target)):
		d.setLocked(target)
	case !target.IsZero():
		d.setLocked(next)
	case d.auto && !next.IsZero():
		d.setLocked(next)
	}
}

func (d *driver) allIdle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.idle == d.workers
}

// settled returns the number of settled points seen so far.
func (d *driver) settledPoints() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settles
}
