package engine

import (
	"context"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"
)

// TestSessionStackPresized: a session's goroutine starts with the stack a
// serial run's session reaches (presizeStack), so going that deep does not
// grow it: growing it moves the stack, which moves the body's locals. A
// new goroutine's stack starts smaller, and grew by doublings, copying the
// session's deepening stack each time (issue 22, item 5).
func TestSessionStackPresized(t *testing.T) {
	// A collection may shrink an idle part of a stack, which moves it too.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	rl := &runLeases{parts: &parts{port: &port{cfg: Config{Options: Options{MaxSlice: time.Minute}}}}}
	var before, after uintptr
	err := rl.runSession(context.Background(), "run", newSliceWatch("owner"), func(context.Context) error {
		var local byte
		before = uintptr(unsafe.Pointer(&local))
		deep(sessionStack / 2 / 512)
		after = uintptr(unsafe.Pointer(&local))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("the session's stack moved (grew) going %d KiB deep: it starts smaller than sessionStack", sessionStack/2>>10)
	}
}

// deep uses about 512 bytes of stack per level, n levels.
//
//go:noinline
func deep(n int) byte {
	var frame [512]byte
	frame[n%len(frame)] = byte(n)
	if n <= 1 {
		return frame[0]
	}
	return deep(n-1) + frame[n%len(frame)]
}
