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
// process (the engine's linger).
//
// So the environment is *settled* when every receiver of the Worker is
// waiting in Receive (no message is being handled, hence no workflow or step
// runs) and no message is visible at the virtual now: nothing can happen
// until the clock moves or the test acts. At a settled point the driver
// first lets the checks registered by WaitSuspended and Settle look at the
// world, then moves the clock: towards a pending Advance's target, one due
// message at a time, and, in automatic time while the test waits for a run
// (Wait, WaitSuspended), to the next message's time. The test is the one
// actor the driver cannot see; skipping only while it waits keeps what it
// does between two waits (start runs, resume hooks) at one instant.

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
	hinted   bool // a hint is scheduled for the clock's current reading
	hint     func(next time.Time)
	grace    time.Duration  // before the hint (hintGrace); mu guards it
	bg       sync.WaitGroup // hint goroutines
}

// settleCheck runs at settled points until it reports done. While a check
// that skips is pending, the test waits for a run (Wait, WaitSuspended):
// in automatic time the clock skips only then.
type settleCheck struct {
	fn    func(ctx context.Context) bool
	skips bool
	done  chan struct{}
	ran   bool // it ran at a settled point (mu guards it)
}

// advance is a pending Advance: the clock is to reach target.
type advance struct {
	target time.Time
	done   chan struct{}
}

// newDriver returns a driver of a clock reading start; its World is set
// before it runs.
func newDriver(start time.Time, auto bool, workers int) *driver {
	return &driver{
		auto: auto, workers: workers, now: start,
		clockCh: make(chan struct{}), progress: make(chan struct{}), kick: make(chan struct{}, 1),
		grace: hintGrace,
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
	d.hinted = false
	close(d.clockCh)
	d.clockCh = make(chan struct{})
	d.changedLocked()
}

// addCheck registers fn to run at settled points until it returns true
// (its done channel is closed then); skips says whether the test waits for a
// run meanwhile.
func (d *driver) addCheck(fn func(ctx context.Context) bool, skips bool) *settleCheck {
	c := &settleCheck{fn: fn, skips: skips, done: make(chan struct{})}
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

// waitingLocked reports whether the test waits for a run; mu is held.
func (d *driver) waitingLocked() bool {
	for _, c := range d.checks {
		if c.skips {
			return true
		}
	}
	return false
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
	defer d.bg.Wait()
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
	checks := append([]*settleCheck(nil), d.checks...)
	d.mu.Unlock()
	answered := false
	for _, c := range checks {
		done := c.fn(ctx)
		d.mu.Lock()
		c.ran = true
		d.mu.Unlock()
		if done {
			d.dropCheck(c)
			close(c.done)
			answered = true
		}
	}
	if !d.allIdle() || !d.Now().Equal(now) {
		return // something changed: look again later
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.checks {
		if !c.ran {
			return // registered meanwhile: it runs at the next look, before the clock moves
		}
	}
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
	case answered:
		// A wait of the test was answered: the test acts next, and the
		// automatic clock waits for it.
	case d.auto && !next.IsZero() && d.waitingLocked():
		d.setLocked(next)
	case d.auto && !next.IsZero() && !d.hinted && d.hint != nil:
		d.hinted = true
		d.bg.Add(1)
		go d.hintLater(ctx, d.grace, d.now, next)
	}
}

// hintGrace is how long (in real time) the clock may wait for the test,
// with a timer pending and the test not waiting in the environment, before
// the driver says why nothing happens.
const hintGrace = 2 * time.Second

// hintLater calls the hint if the clock is still at at after grace
// with nobody waiting: the test probably waits for a run some other way
// (Run.Result), which does not move the clock.
func (d *driver) hintLater(ctx context.Context, grace time.Duration, at, next time.Time) {
	defer d.bg.Done()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	d.mu.Lock()
	stuck := d.now.Equal(at) && !d.waitingLocked()
	d.mu.Unlock()
	if stuck {
		d.hint(next)
	}
}

func (d *driver) allIdle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.idle == d.workers
}
