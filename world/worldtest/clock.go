package worldtest

import (
	"sync/atomic"
	"time"
)

// Clock is a clock the suite moves: the wall clock plus an offset that only
// grows. A World under test reads it (its Config's Now: Clock.Now) so that
// the cases judge leases and retry times on it, not on how fast the machine
// is: a lease a case means to expire is a minute long and the case moves the
// clock past it at once; a lease it means to hold is never at risk of
// lapsing while the machine is busy. Time still flows as on the wall clock
// between two moves, so queue delays, polls and timers work as usual.
//
// Several Worlds (two processes on the same tables) read one Clock. The
// zero Clock reads the wall clock; it is safe for concurrent use.
type Clock struct {
	offset atomic.Int64
}

// Now returns the wall-clock time plus the offset the suite moved the clock
// by.
func (c *Clock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Advance moves the clock forward by d (nothing when d <= 0).
func (c *Clock) Advance(d time.Duration) {
	if d > 0 {
		c.offset.Add(int64(d))
	}
}
