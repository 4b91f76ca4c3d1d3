package sdk

import "time"

// Sleep suspends the workflow for d, durably: the run costs nothing while
// it sleeps and wakes within about a second of its time (within one queue
// hop on SQS).
func Sleep(ctx Context, d time.Duration) error {
	_, err := NewTimer(ctx, d).Get(ctx)
	return err
}

// SleepUntil suspends the workflow until t.
func SleepUntil(ctx Context, t time.Time) error {
	_, err := NewTimerAt(ctx, t).Get(ctx)
	return err
}

// NewTimer returns a future that settles after d, to race against steps or
// hooks with Select. d is measured from when the timer is recorded, at the
// workflow's next suspension.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] {
	return Future[struct{}]{p: waitPromise{f: ctx.impl().ec.Sleep(d)}}
}

// NewTimerAt returns a future that settles at t.
func NewTimerAt(ctx Context, t time.Time) Future[struct{}] {
	return Future[struct{}]{p: waitPromise{f: ctx.impl().ec.Wait(t)}}
}
