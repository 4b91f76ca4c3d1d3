package engine

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// A workflow that panics after it has yielded fails with the panic; one that
// calls runtime.Goexit fails too, and neither takes the engine's goroutine
// down, before or after stop.
func TestCoroutinePanicAndGoexit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		end  func()
		want string
	}{
		{"panic", func() { panic("kaboom") }, "workflow panicked: kaboom"},
		{"goexit", runtime.Goexit, "workflow called runtime.Goexit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var co *coroutine
			var deferred atomic.Bool
			open := false
			co = newCoroutine(func() (json.RawMessage, error) {
				defer deferred.Store(true)
				co.await(func() bool { return open })
				c.end()
				return nil, nil
			})
			co.step()
			if !co.blocked || co.done {
				t.Fatal("not parked")
			}
			open = true
			if !co.ready() {
				t.Fatal("not ready")
			}
			co.step()
			if !co.done || co.panic == nil || !strings.Contains(co.panic.Message, c.want) {
				t.Fatalf("done %v panic %+v", co.done, co.panic)
			}
			co.stop()
			co.stop()
			if !deferred.Load() {
				t.Error("the coroutine did not unwind")
			}
		})
	}
}

// Stopping a coroutine that never ran is harmless.
func TestCoroutineStopUnstarted(t *testing.T) {
	t.Parallel()
	ran := false
	co := newCoroutine(func() (json.RawMessage, error) { ran = true; return nil, nil })
	co.stop()
	co.step()
	if ran || co.done {
		t.Error("a stopped coroutine ran")
	}
}
