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
	select {
	case <-first:
	case <-time.After(wait):
		t.Fatalf("no call in %s", wait)
	}
	cancel()
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatalf("stop did not return in %s", wait)
	}
	n := calls.Load()
	time.Sleep(5 * time.Millisecond)
	if m := calls.Load(); m != n {
		t.Fatalf("%d calls after the context ended and stop returned", m-n)
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
