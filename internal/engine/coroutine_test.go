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

// mine tells the coroutine's goroutine (at any depth) from every other: the
// engine's, and one the workflow starts.
func TestCoroutineMine(t *testing.T) {
	t.Parallel()
	var co *coroutine
	got := map[string]bool{}
	co = newCoroutine(func() (json.RawMessage, error) {
		got["workflow"] = co.mine()
		got["workflow, 300 frames down"] = deepCall(300, co.mine)
		ch := make(chan bool)
		go func() { ch <- co.mine() }()
		got["its goroutine"] = <-ch
		return nil, nil
	})
	co.step()
	got["engine"] = co.mine()
	for who, want := range map[string]bool{"workflow": true, "workflow, 300 frames down": true, "its goroutine": false, "engine": false} {
		if got[who] != want {
			t.Errorf("mine() on %s: %v, want %v", who, got[who], want)
		}
	}
	co.stop()
}

func deepCall(n int, f func() bool) bool {
	if n == 0 {
		return f()
	}
	return deepCall(n-1, f)
}
