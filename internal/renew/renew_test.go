package renew

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// wait is the bound on each wait below: generous, so that a busy machine
// cannot fail a test; none of them is a measurement.
const wait = time.Minute

func TestEveryCallsUntilFalse(t *testing.T) {
	var calls atomic.Int32
	ended := make(chan struct{})
	stop := Every(context.Background(), time.Millisecond, func() bool {
		if calls.Add(1) == 3 {
			close(ended)
			return false
		}
		return true
	})
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatalf("%d calls in %s, want 3", calls.Load(), wait)
	}
	stop() // returns although the loop has already ended
	time.Sleep(5 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3: the loop went on after f returned false", n)
	}
}

func TestEveryStopWaitsForTheCallInProgress(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	var once atomic.Bool
	stop := Every(context.Background(), time.Millisecond, func() bool {
		if once.CompareAndSwap(false, true) {
			close(entered)
			<-release
			returned.Store(true)
		}
		return true
	})
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatalf("no call in %s", wait)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while a call was in progress")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatalf("stop did not return in %s after the call ended", wait)
	}
	if !returned.Load() {
		t.Fatal("stop returned before the call did")
	}
}

func TestEveryEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	first := make(chan struct{})
	stop := Every(ctx, time.Millisecond, func() bool {
		if calls.Add(1) == 1 {
			close(first)
		}
		return true
	})
	defer stop()
	select {
	case <-first:
	case <-time.After(wait):
		t.Fatalf("no call in %s", wait)
	}
	cancel()
	// A call in progress as the context ends may still finish; none starts
	// after it, however long the loop is left to run without stop.
	n := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if m := calls.Load(); m > n+1 {
		t.Fatalf("%d calls in the 50 periods after the context ended, want at most the one in progress", m-n)
	}
}

// A slow call does not push the next one back: each call is due a period
// after the one before it started, so after a call longer than the period
// the next starts as soon as it returns. A loop that waited a period after
// each return (what this replaced) leaves a gap of at least the period
// between every call's end and the next call's start, whatever the
// machine; here the gaps are only the timers' scheduling delays, and the
// test asks that one of three be under half a second.
func TestEveryFixedRate(t *testing.T) {
	t.Parallel()
	const period, slow = 500 * time.Millisecond, time.Second
	var (
		calls        atomic.Int32
		starts, ends [4]time.Time
	)
	done := make(chan struct{})
	stop := Every(context.Background(), period, func() bool {
		i := calls.Add(1) - 1
		starts[i] = time.Now()
		time.Sleep(slow)
		ends[i] = time.Now()
		if i == 3 {
			close(done)
			return false
		}
		return true
	})
	defer stop()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%d calls in %s, want 4", calls.Load(), wait)
	}
	least := time.Duration(1<<63 - 1)
	for i := 1; i < 4; i++ {
		least = min(least, starts[i].Sub(ends[i-1]))
	}
	if least >= period {
		t.Fatalf("every call started at least %s after the one before it returned, want one right after (the period of %s had passed)", least, period)
	}
}

func TestEveryWaitsAPeriodFirst(t *testing.T) {
	var calls atomic.Int32
	stop := Every(context.Background(), time.Hour, func() bool { calls.Add(1); return true })
	stop()
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls before the first period ended", n)
	}
}
