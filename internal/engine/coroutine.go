package engine

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/skeinflow/skein/world"
)

// coroutine runs a workflow function on its own goroutine, handing control
// back and forth with the engine: the engine calls step, which resumes the
// coroutine and waits until it yields (blocked in await, returned or
// panicked). Exactly one of the two runs at any time, so the coroutine's
// state may be read by the engine between steps without locks: the channel
// handoffs order every access.
type coroutine struct {
	resume chan struct{}
	yield  chan struct{}
	kill   chan struct{}
	exited chan struct{}

	// Written by the coroutine before it yields; read by the engine after.
	blocked bool
	cond    func() bool
	done    bool
	output  json.RawMessage
	err     error
	panic   *world.ErrorData
}

func newCoroutine(fn func() (json.RawMessage, error)) *coroutine {
	co := &coroutine{
		resume: make(chan struct{}),
		yield:  make(chan struct{}),
		kill:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go co.main(fn)
	return co
}

func (co *coroutine) main(fn func() (json.RawMessage, error)) {
	defer close(co.exited)
	select {
	case <-co.resume:
	case <-co.kill:
		return
	}
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		select {
		case <-co.kill:
			return // discarded by the engine (runtime.Goexit in await)
		default:
		}
		if r == nil {
			r = "workflow called runtime.Goexit"
		}
		co.done = true
		co.panic = &world.ErrorData{
			Type:    TypePanic,
			Message: fmt.Sprintf("workflow panicked: %v", r),
			Stack:   string(debug.Stack()),
		}
		co.yield <- struct{}{}
	}()
	out, err := fn()
	co.done, co.output, co.err = true, out, err
	finished = true
	co.yield <- struct{}{}
}

// step runs the coroutine until it yields. Engine side.
func (co *coroutine) step() {
	co.blocked = false
	co.resume <- struct{}{}
	<-co.yield
}

// ready reports whether the coroutine is blocked on a condition that now
// holds. Engine side, while the coroutine is parked.
func (co *coroutine) ready() bool {
	return co.blocked && !co.done && co.cond()
}

// await parks the coroutine until cond holds. Coroutine side.
func (co *coroutine) await(cond func() bool) {
	for !cond() {
		select {
		case <-co.kill:
			runtime.Goexit()
		default:
		}
		co.cond, co.blocked = cond, true
		co.yield <- struct{}{}
		select {
		case <-co.resume:
		case <-co.kill:
			runtime.Goexit()
		}
	}
}

// stop discards the coroutine and waits for its goroutine to exit. Engine
// side; safe to call more than once.
func (co *coroutine) stop() {
	select {
	case <-co.kill:
	default:
		close(co.kill)
	}
	<-co.exited
}
