package engine

// Workflow code that blocks its coroutine on something other than the
// workflow API (a channel a goroutine it started never sends on, a mutex,
// time.Sleep, a long loop) keeps the coroutine's slice from ending, and a
// slice runs on the session's goroutine (coroutine.step): nothing can make
// it return. So a session runs on a goroutine of its own, and the caller
// watches it (watchSession): when the slice outlasts its bound, the context
// ends, or a foreign goroutine misused the API while the slice still runs,
// the caller abandons the session and its goroutine (leaks them, logged
// once) instead of waiting, fails the run when the code is at fault, gives
// the run lease back and returns.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/world"
)

// stuckGrace is how long a slice may still run once the context has ended or
// a foreign goroutine misused the API before its session is abandoned.
const stuckGrace = time.Second

// errAbandoned is what an abandoned session's goroutine reports, should it
// ever end.
var errAbandoned = errors.New("engine: session abandoned: workflow code blocked outside the workflow API")

// sliceWatch is shared by a session's goroutine, which marks the slices it
// runs, and the caller watching it.
type sliceWatch struct {
	start     atomic.Int64 // UnixNano when the running slice began; 0 between slices
	abandoned atomic.Bool
	poked     chan struct{}                   // a foreign goroutine misused the API
	misuse    atomic.Pointer[world.ErrorData] // what it did
	mu        sync.Mutex
	owner     string // the run lease's current owner
}

func newSliceWatch(owner string) *sliceWatch {
	return &sliceWatch{poked: make(chan struct{}, 1), owner: owner}
}

func (w *sliceWatch) setOwner(owner string) {
	w.mu.Lock()
	w.owner = owner
	w.mu.Unlock()
}

func (w *sliceWatch) leaseOwner() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.owner
}

// misused records a foreign goroutine's misuse for the watcher.
func (w *sliceWatch) misused(d *world.ErrorData) {
	w.misuse.CompareAndSwap(nil, d)
	select {
	case w.poked <- struct{}{}:
	default:
	}
}

// running returns when the running slice began (zero between slices).
func (w *sliceWatch) running() int64 { return w.start.Load() }

// slice runs the coroutine until it yields, marked for the watcher. Should
// the watcher have abandoned the session meanwhile, the session's goroutine
// ends here, touching nothing more.
func (r *replayer) slice() {
	r.slices++
	w := r.watch.Load()
	if w == nil {
		r.co.step()
		return
	}
	w.start.Store(time.Now().UnixNano())
	r.co.step()
	w.start.Store(0)
	if w.abandoned.Load() {
		runtime.Goexit()
	}
}

// sessionStack is the stack a session's goroutine starts with (see
// presizeStack): what a serial run's session reaches (its log decoded, its
// commits encoded), with room to spare.
const sessionStack = 32 << 10

// presizeStack grows the calling goroutine's stack to sessionStack at once,
// while it is still shallow. A session runs on a goroutine of its own,
// which starts with a small stack (runtime's adaptive starting size, a few
// KiB here); growing it to what a session needs took several doublings,
// each copying the deeper and deeper stack of the session's JSON decoding:
// some 40µs of CPU per run (BENCHMARKS.md, issue 22, item 5). One frame of
// half that size makes the runtime grow the stack to fit it in one step,
// copying only this shallow frame; the goroutine keeps the stack when the
// frame returns.
//
//go:noinline
func presizeStack() {
	var frame [sessionStack / 2]byte
	keepFrame(frame[:])
}

// keepFrame is presizeStack's use of its frame, so that the compiler keeps
// it.
//
//go:noinline
func keepFrame(b []byte) { _ = b[len(b)-1] }

// stuckReason is why a session is abandoned.
type stuckReason int

const (
	stuckNone    stuckReason = iota
	stuckMisuse              // a foreign goroutine misused the API; the slice never yielded
	stuckTimeout             // the slice outlasted Config.MaxSlice
	stuckCtx                 // the context ended while the slice ran
)

// runSession runs body, a session, on a goroutine of its own and waits for
// it, abandoning it when it is stuck in a slice (see the file comment).
func (rl *runLeases) runSession(ctx context.Context, runID string, w *sliceWatch, body func(ctx context.Context) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type end struct {
		err      error
		panicked bool
		value    any
	}
	done := make(chan end, 1)
	go func() {
		presizeStack()
		err := errAbandoned
		defer func() {
			// A panic goes on on the caller's goroutine, where it would
			// have happened without this one (whoever recovers it there
			// recovers it still).
			if v := recover(); v != nil {
				done <- end{panicked: true, value: v}
				return
			}
			done <- end{err: err}
		}()
		err = body(sctx)
	}()
	check := time.NewTicker(max(rl.cfg.MaxSlice/4, 10*time.Millisecond))
	defer check.Stop()
	var since time.Time // when the context ended or a misuse was first seen
	ctxDone := ctx.Done()
	for {
		select {
		case r := <-done:
			if r.panicked {
				panic(r.value)
			}
			return r.err
		case <-ctxDone:
			ctxDone = nil
			if since.IsZero() {
				since = time.Now()
			}
			check.Reset(stuckGrace / 10)
		case <-w.poked:
			if since.IsZero() {
				since = time.Now()
			}
			check.Reset(stuckGrace / 10)
		case <-check.C:
		}
		reason := rl.stuck(ctx, w, since)
		if reason == stuckNone {
			continue
		}
		w.abandoned.Store(true)
		cancel()
		return rl.abandon(ctx, runID, w, reason)
	}
}

// stuck tells whether the session's running slice must be abandoned: it
// has run for longer than Config.MaxSlice, or for stuckGrace past the end
// of the context or a misuse (since).
func (rl *runLeases) stuck(ctx context.Context, w *sliceWatch, since time.Time) stuckReason {
	start := w.running()
	if start == 0 {
		return stuckNone
	}
	began := time.Unix(0, start)
	misuse := w.misuse.Load() != nil
	if time.Since(began) > rl.cfg.MaxSlice {
		if misuse {
			return stuckMisuse
		}
		return stuckTimeout
	}
	if since.IsZero() {
		return stuckNone
	}
	if began.Before(since) {
		began = since
	}
	if time.Since(began) < stuckGrace {
		return stuckNone
	}
	switch {
	case misuse:
		return stuckMisuse
	case ctx.Err() != nil:
		return stuckCtx
	}
	return stuckNone
}

// abandon leaves a stuck session's goroutine behind: it fails the run when
// its code is at fault, gives the run lease back and returns what the
// delivery's caller should see.
func (rl *runLeases) abandon(ctx context.Context, runID string, w *sliceWatch, reason stuckReason) error {
	var data *world.ErrorData
	code := ""
	switch reason {
	case stuckMisuse:
		data, code = w.misuse.Load(), world.CodeWorkflowAPIMisuse
	case stuckTimeout:
		code = world.CodeReplayTimeout
		data = &world.ErrorData{Type: TypeReplayTimeout, Message: fmt.Sprintf("workflow code ran for more than %s "+
			"without calling the workflow API: it blocks outside the workflow API (on a channel, a mutex, time.Sleep "+
			"or a long loop). Workflow code must wait only through the workflow API (steps, sleeps, hooks, futures) and "+
			"do its work in steps", rl.cfg.MaxSlice)}
	}
	rl.log.Warn("engine: workflow code blocked outside the workflow API; its goroutine is abandoned, not waited for",
		"run", runID, "code", code, "ctxErr", ctx.Err())
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	if data != nil {
		rl.failStuck(bg, runID, data, code)
	}
	if err := rl.releaseRunLease(bg, runID, w.leaseOwner()); err != nil {
		rl.log.Debug("engine: give back the lease of an abandoned session", "run", runID, "err", err)
	}
	if data == nil {
		return ctx.Err()
	}
	return nil
}

// failStuck fails a run whose session was abandoned: run_failed fenced on
// a checked read of the log, not on the abandoned session's (appendFenced:
// refused if the run has ended meanwhile, nothing written if its log is
// damaged), then a continuation that runs the side effects of the run's
// end.
func (rl *runLeases) failStuck(ctx context.Context, runID string, data *world.ErrorData, code string) {
	_, err := rl.appendFenced(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunFailed{Error: data, ErrorCode: code}},
	}})
	if err != nil {
		if !errors.Is(err, world.ErrGone) && !errors.Is(err, world.ErrConflict) {
			rl.log.Warn("engine: fail a run whose workflow code blocked", "run", runID, "err", err)
		}
		return
	}
	if err := Wake(ctx, rl.w, rl.now, runID, keyMisuse(runID)); err != nil {
		rl.log.Warn("engine: wake a run failed for blocking", "run", runID, "err", err)
	}
}
