package engine

import (
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"runtime/debug"

	"github.com/skeinflow/skein/world"
)

// coroutine runs a workflow function on its own goroutine, handing control
// back and forth with the engine: the engine calls step, which resumes the
// coroutine and waits until it yields (blocked in await, returned or
// panicked). Exactly one of the two runs at any time, so the coroutine's
// state may be read by the engine between steps without locks: the handoffs
// order every access.
//
// The handoffs are the runtime's coroutine switches (iter.Pull): control
// passes directly from one goroutine to the other on the same thread,
// without going through the scheduler. With channels, every handoff made the
// other goroutine runnable, and the scheduler woke an idle processor to run
// it, which on a serial workflow cost a thread wake-up per step for nothing.
type coroutine struct {
	next  func() (struct{}, bool)
	halt  func()
	yield func(struct{}) bool // the coroutine's side of the handoff

	// Written by the coroutine before it yields; read by the engine after.
	blocked bool
	cond    func() bool
	done    bool
	output  json.RawMessage
	err     error
	panic   *world.ErrorData

	// mark identifies the coroutine's goroutine (markCoroutine, mine);
	// written before the workflow runs, read-only after.
	mark uintptr

	// Engine side.
	stopped  bool // stop was called: the coroutine unwinds if resumed
	returned bool // the coroutine's function returned (did not Goexit)
}

func newCoroutine(fn func() (json.RawMessage, error)) *coroutine {
	co := &coroutine{}
	co.next, co.halt = iter.Pull(func(yield func(struct{}) bool) {
		co.yield = yield
		co.enter(fn)
		co.returned = true
	})
	return co
}

// enter calls main: its frame is the one mine looks for on a stack.
//
//go:noinline
func (co *coroutine) enter(fn func() (json.RawMessage, error)) {
	co.main(fn)
}

//go:noinline
func (co *coroutine) main(fn func() (json.RawMessage, error)) {
	co.markCoroutine()
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		if co.stopped {
			return // discarded by the engine (runtime.Goexit in await)
		}
		co.done = true
		if r != nil {
			co.panic = &world.ErrorData{
				Type:    TypePanic,
				Message: fmt.Sprintf("workflow panicked: %v", r),
				Stack:   string(debug.Stack()),
			}
			return // recovered: the coroutine returns to the engine
		}
		co.panic = &world.ErrorData{
			Type:    TypePanic,
			Message: "workflow panicked: workflow called runtime.Goexit",
			Stack:   string(debug.Stack()),
		}
		// A Goexit cannot be stopped. Hand control back from here, in the
		// middle of it, so that the engine sees the failure; stop lets it
		// finish.
		co.yield(struct{}{})
	}()
	out, err := fn()
	co.done, co.output, co.err = true, out, err
	finished = true
}

// step runs the coroutine until it yields. Engine side.
func (co *coroutine) step() {
	if co.stopped {
		return
	}
	co.blocked = false
	co.next()
}

// ready reports whether the coroutine is blocked on a condition that now
// holds. Engine side, while the coroutine is parked.
func (co *coroutine) ready() bool {
	return co.blocked && !co.done && co.cond()
}

// await parks the coroutine until cond holds. Coroutine side.
func (co *coroutine) await(cond func() bool) {
	for !cond() {
		co.cond, co.blocked = cond, true
		if co.stopped || !co.yield(struct{}{}) {
			runtime.Goexit() // discarded: unwind the workflow's stack
		}
	}
}

// stop discards the coroutine and waits for its goroutine to exit. Engine
// side; safe to call more than once.
func (co *coroutine) stop() {
	if co.stopped {
		return
	}
	co.stopped = true
	if co.returned {
		co.halt() // nothing left to unwind
		return
	}
	// The coroutine is parked in await (or in a Goexit): resuming it makes it
	// unwind with runtime.Goexit, which iter.Pull passes on to the caller of
	// halt. Let a goroutine of its own absorb it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		co.halt()
	}()
	<-done
}
