// Package renew is the one loop that keeps something alive while it is
// worked on: the Worker's heartbeat (a delivery's visibility), the
// engine's run lease renewal and its watch of a running step (the step's
// lease, its run's end) all call Every.
package renew

import (
	"context"
	"sync"
	"time"
)

// Every calls f every period until f returns false, ctx ends or stop is
// called. The first call comes one period after Every returns, each next
// one a period after the call before it started (at once when that call
// took longer): a slow call does not push the ones after it back, so a
// caller that renews a lease every third of its TTL keeps that margin
// however long each renewal takes. Between calls nothing runs: each call
// is a timer's (time.AfterFunc), so keeping a short task alive costs a
// timer and no goroutine. stop returns once no call of f is in progress
// and none will start; it must be called exactly once. A period under a
// millisecond counts as a millisecond.
func Every(ctx context.Context, period time.Duration, f func() bool) (stop func()) {
	period = max(period, time.Millisecond)
	var (
		mu      sync.Mutex
		stopped bool
		timer   *time.Timer
		running sync.WaitGroup
	)
	var tick func()
	tick = func() {
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		started := time.Now()
		if !f() {
			return
		}
		mu.Lock()
		if !stopped {
			timer = time.AfterFunc(max(period-time.Since(started), 0), tick)
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(period, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		running.Wait()
	}
}
