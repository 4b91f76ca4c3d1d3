package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/skeinflow/skein/internal/engine"
)

// promise is the state behind a Future: a step, a wait, a hook payload, a
// child run, or a value known at once.
type promise interface {
	// state reports whether the promise has settled and, if so, its
	// position among the run's settlements (log order).
	state() (order int64, done bool)
	// failed reports whether a settled promise failed.
	failed() bool
	outcome() (json.RawMessage, error)
}

// Awaitable is anything Select can wait on: every Future.
type Awaitable interface {
	awaitState() (order int64, done bool)
}

// Future is the eventual result of a step, a timer, a hook payload or a
// child workflow. Futures are values; copy them freely.
type Future[T any] struct {
	p promise
}

func (f Future[T]) awaitState() (int64, bool) { return f.promise().state() }

// promise returns the future's state; the zero Future is settled with an
// error rather than a nil dereference.
func (f Future[T]) promise() promise {
	if f.p == nil {
		return readyPromise{err: errors.New("workflow: zero Future")}
	}
	return f.p
}

// Done reports whether the future has settled.
func (f Future[T]) Done() bool {
	_, ok := f.promise().state()
	return ok
}

// Get waits for the future and returns its value.
func (f Future[T]) Get(ctx Context) (T, error) {
	ctx.impl().ec.Await(f.Done)
	return f.result()
}

func (f Future[T]) result() (T, error) {
	var v T
	p := f.promise()
	raw, err := p.outcome()
	if err != nil {
		return v, err
	}
	if err := unmarshal(raw, &v); err != nil {
		if hp, ok := p.(*hookPromise); ok {
			return v, &SerializationError{What: reflect.TypeFor[T]().String(), Decode: true, Token: hp.h.Token(), HookID: hp.h.ID(), Err: err}
		}
		what := "result"
		if sp, ok := p.(*stepPromise); ok {
			what = fmt.Sprintf("the result of step %q", sp.name)
		}
		return v, &SerializationError{What: what, Decode: true, Err: err}
	}
	return v, nil
}

func failed[T any](err error) Future[T] { return Future[T]{p: readyPromise{err: err}} }

type readyPromise struct {
	raw json.RawMessage
	err error
}

func (p readyPromise) state() (int64, bool)              { return 0, true }
func (p readyPromise) failed() bool                      { return p.err != nil }
func (p readyPromise) outcome() (json.RawMessage, error) { return p.raw, p.err }

type stepPromise struct {
	f    *engine.Future
	name string
	reg  *Registry
}

func (p *stepPromise) state() (int64, bool) { return p.f.Order(), p.f.Done() }

func (p *stepPromise) failed() bool {
	_, fail := p.f.Result()
	return fail != nil
}

func (p *stepPromise) outcome() (json.RawMessage, error) {
	res, fail := p.f.Result()
	if fail != nil {
		return nil, &StepError{Step: p.name, StepID: p.f.ID(), Attempt: p.f.Attempt(), Err: p.reg.decode(fail)}
	}
	return res, nil
}

type waitPromise struct{ f *engine.Future }

func (p waitPromise) state() (int64, bool)              { return p.f.Order(), p.f.Done() }
func (p waitPromise) failed() bool                      { return false }
func (p waitPromise) outcome() (json.RawMessage, error) { return nil, nil }

// All waits for every future and returns their values in order. It returns
// as soon as one fails (the first failure in log order), leaving the others
// running.
func All[T any](ctx Context, fs ...Future[T]) ([]T, error) {
	ec := ctx.impl().ec
	// The condition looks again only once something has settled, at the
	// futures from the first one not yet seen settled (futures settle once
	// and for good), and for a failure only once a settlement may have
	// failed one, at those same futures (one before them was seen settled
	// when no failure was among them): a step or timer settling costs O(1),
	// not O(len(fs)). A hook payload may fail a child's future, so over
	// child runs and hook payloads each settlement still looks at the
	// futures not yet passed.
	// The engine and the coroutine may each ask again after a change: the
	// answer for the same counts is the last one.
	next, seen, seenFailures, holds := 0, int64(-1), int64(-1), false
	ec.Await(func() bool {
		settled, failures := ec.Progress()
		if settled == seen {
			return holds
		}
		seen = settled
		if failures != seenFailures {
			seenFailures = failures
			if anyFailed(fs[next:]) {
				holds = true
				return true
			}
		}
		for ; next < len(fs); next++ {
			if _, done := fs[next].promise().state(); !done {
				return false
			}
		}
		holds = true
		return true
	})
	if i := firstSettled(fs, func(p promise) bool { return p.failed() }); i >= 0 {
		_, err := fs[i].result()
		return nil, err
	}
	out := make([]T, len(fs))
	for i, f := range fs {
		v, err := f.result()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func anyFailed[T any](fs []Future[T]) bool {
	for _, f := range fs {
		if _, done := f.promise().state(); done && f.promise().failed() {
			return true
		}
	}
	return false
}

// firstSettled returns the index of the future that settled first in log
// order among those matching keep, or -1.
func firstSettled[T any](fs []Future[T], keep func(promise) bool) int {
	best, bestOrder := -1, int64(0)
	for i, f := range fs {
		order, done := f.promise().state()
		if !done || !keep(f.promise()) {
			continue
		}
		if best < 0 || order < bestOrder {
			best, bestOrder = i, order
		}
	}
	return best
}

// Race waits for the first future to settle (first in log order) and
// returns its value or error. The others keep running.
func Race[T any](ctx Context, fs ...Future[T]) (T, error) {
	var zero T
	if len(fs) == 0 {
		return zero, nil
	}
	ctx.impl().ec.Await(unlessSettled(ctx, func() bool { return firstSettled(fs, func(promise) bool { return true }) >= 0 }))
	return fs[firstSettled(fs, func(promise) bool { return true })].result()
}

// Any waits for the first future to succeed (first in log order) and
// returns its value. When all fail it returns their errors joined, as
// errors.Join does (errors.Is and errors.As look into each; the members
// are the futures' errors in the order of fs), with a message that says
// how many failed.
func Any[T any](ctx Context, fs ...Future[T]) (T, error) {
	var zero T
	ok := func(p promise) bool { return !p.failed() }
	ctx.impl().ec.Await(unlessSettled(ctx, func() bool {
		if firstSettled(fs, ok) >= 0 {
			return true
		}
		for _, f := range fs {
			if _, done := f.promise().state(); !done {
				return false
			}
		}
		return true
	}))
	if i := firstSettled(fs, ok); i >= 0 {
		return fs[i].result()
	}
	errs := make([]error, len(fs))
	for i, f := range fs {
		_, errs[i] = f.result()
	}
	return zero, &allFailedError{Errors: errs}
}

// Select waits until one of fs settles and returns the index of the first
// to settle in log order. Its value is then read with Get, which does not
// wait. Select mixes futures of different types (a step against a timer).
func Select(ctx Context, fs ...Awaitable) int {
	first := func() int {
		best, bestOrder := -1, int64(0)
		for i, f := range fs {
			order, done := f.awaitState()
			if done && (best < 0 || order < bestOrder) {
				best, bestOrder = i, order
			}
		}
		return best
	}
	if len(fs) == 0 {
		return -1
	}
	ctx.impl().ec.Await(unlessSettled(ctx, func() bool { return first() >= 0 }))
	return first()
}

// unlessSettled returns cond, asked again only once something has settled
// in the run since it was last asked, and otherwise answering as it last
// did: nothing but a settlement changes a future's state while the
// workflow waits, so a condition over many futures costs a look at them
// per settlement, not per event the engine applies (the engine and the
// coroutine each ask after a change).
func unlessSettled(ctx Context, cond func() bool) func() bool {
	ec := ctx.impl().ec
	seen, holds := int64(-1), false
	return func() bool {
		if settled, _ := ec.Progress(); settled != seen {
			seen, holds = settled, cond()
		}
		return holds
	}
}
