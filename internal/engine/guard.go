package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/skeinflow/skein/world"
)

// TypeAPIMisuse is the error type of a run failed with
// world.CodeWorkflowAPIMisuse.
const TypeAPIMisuse = "WorkflowAPIMisuseError"

// apiGuard keeps the workflow API on the workflow's own goroutine (the
// coroutine). Workflow code that starts a goroutine and calls a step, a
// sleep, a hook or a future's Get from it would hand control to the engine
// from a goroutine the engine does not run: iter.Pull panics on that
// goroutine, where nothing can recover, and the process dies, at every
// restart again. Instead every entry into the API checks its caller (see
// coroutine.mine): a foreign caller records the misuse, which fails the run
// with world.CodeWorkflowAPIMisuse, and its goroutine ends there
// (runtime.Goexit, running its deferred calls) without touching the
// workflow's state.
//
// A session that holds the replayer fails the run itself (failMisused, at
// its next turn, woken by misused). Once no session will (the replayer is
// retired: the session ended or rebuilt the workflow), the foreign goroutine
// fails the run through report, as a cancellation does: a run_failed
// fenced on a checked read of the log (not on the session's), then a
// continuation for the side effects of the run's end.
// A session retires its replayer before it looks at misuse for the last
// time, and a foreign goroutine sets misuse before it looks at live, so at
// least one of the two fails the run (both may: the second is refused).
type apiGuard struct {
	home     *coroutine // the run's coroutine; set before it starts, never reset
	misuse   atomic.Pointer[world.ErrorData]
	misused  chan struct{} // closed when misuse is first set
	live     atomic.Bool   // a session holds the replayer and will look at misuse
	reported atomic.Bool
	report   func(*world.ErrorData) // fails the run from outside a session
}

func newAPIGuard() apiGuard { return apiGuard{misused: make(chan struct{})} }

// enter is called by every workflow API entry that changes the workflow's
// state or waits. On the coroutine it returns (after parking for good when
// a foreign goroutine has misused the API: the run is failing). Anywhere
// else it records the misuse and ends the calling goroutine.
func (r *replayer) enter(what string) {
	co := r.guard.home
	if co != nil && co.mine() {
		if r.guard.misuse.Load() != nil {
			co.await(func() bool { return false }) // the engine fails the run and discards us
		}
		return
	}
	data := &world.ErrorData{
		Type: TypeAPIMisuse,
		Message: fmt.Sprintf("workflow API misuse: %s was called from a goroutine the workflow function started. "+
			"Workflow code is replayed on the workflow's own goroutine, and a goroutine it starts cannot be: call steps, "+
			"sleeps, hooks and futures only from the workflow function's goroutine (to run steps at the same time, "+
			"start them with Step.Go and wait with workflow.All, Race, Any or Select)", what),
		Stack: string(debug.Stack()),
	}
	if r.guard.misuse.CompareAndSwap(nil, data) {
		close(r.guard.misused)
	}
	if w := r.watch.Load(); w != nil {
		w.misused(r.guard.misuse.Load())
	}
	if l := r.logger; l != nil {
		l.Warn("engine: workflow API called from a foreign goroutine; the goroutine ends and the run fails unless it has ended",
			"run", r.meta.runID, "call", what, "code", world.CodeWorkflowAPIMisuse)
	}
	if !r.guard.live.Load() && r.guard.report != nil && r.guard.reported.CompareAndSwap(false, true) {
		r.guard.report(r.guard.misuse.Load())
	}
	runtime.Goexit()
}

// retire tells the replayer's foreign goroutines that no session will look
// at misuse any more: from now on they fail the run themselves.
func (r *replayer) retire() { r.guard.live.Store(false) }

// failForeign fails a run whose workflow misused the API, from a goroutine
// that workflow started, once no session holds its replayer: run_failed
// fenced on a checked read of the log (appendFenced: refused if the run
// has ended meanwhile, nothing written if its log is damaged), then a
// continuation that runs the side effects of the run's end.
func (e *parts) failForeign(runID string, data *world.ErrorData) {
	ctx, cancel := context.WithTimeout(context.Background(), sideEffectTimeout)
	defer cancel()
	_, err := e.appendFenced(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunFailed{Error: data, ErrorCode: world.CodeWorkflowAPIMisuse}},
	}})
	switch {
	case errors.Is(err, world.ErrGone) || errors.Is(err, world.ErrConflict):
		// The run has ended: the call is dropped and the run keeps its
		// outcome. Say so, the mistake is in the code all the same.
		e.log.Warn("engine: workflow API called from a goroutine after its run ended; the call was dropped and the run keeps its outcome",
			"run", runID, "code", world.CodeWorkflowAPIMisuse, "error", data.Message)
		return
	case err != nil:
		e.log.Warn("engine: fail a run that misused the workflow API", "run", runID, "err", err)
		return
	}
	if err := Wake(ctx, e.w, e.now, runID, keyMisuse(runID)); err != nil {
		e.log.Warn("engine: wake a run failed for misusing the workflow API", "run", runID, "err", err)
	}
	// The workflow kept for the run (this goroutine's own) goes on no
	// more; the wake-up may be handled by another process, leaving it
	// parked here until the cache is closed.
	e.logs.drop(runID)
}

// failMisused fails the run if a foreign goroutine misused the workflow
// API. Engine side, while the coroutine is parked or done.
func (r *replayer) failMisused() bool {
	data := r.guard.misuse.Load()
	if data == nil {
		return false
	}
	if r.finished || r.terminal != "" {
		return r.failCode == world.CodeWorkflowAPIMisuse // ended before the misuse was seen
	}
	r.stop()
	r.finished = true
	r.output = nil
	r.failure, r.failCode = data, world.CodeWorkflowAPIMisuse
	return true
}

// misused is closed once a foreign goroutine has misused the API.
func (r *replayer) misused() <-chan struct{} { return r.guard.misused }

// markCoroutine records, on the coroutine's goroutine, the return address
// of its entry frame (coroutine.enter calling coroutine.main), which every
// stack walk from the workflow's code passes and no other goroutine's does.
// It is called by coroutine.main, so that frame is two up.
//
//go:noinline
func (co *coroutine) markCoroutine() {
	var pc [1]uintptr
	if runtime.Callers(3, pc[:]) == 1 {
		co.mark = pc[0]
	}
}

// mine reports whether the calling goroutine is the coroutine's: whether
// its stack holds the coroutine's entry frame. A walk of the program
// counters costs about 25 ns a frame, no symbol lookups. Without a mark
// (the entry frame could not be read) it cannot tell and refuses nobody.
func (co *coroutine) mine() bool {
	if co.mark == 0 {
		return true
	}
	var pcs [64]uintptr
	for skip := 2; ; {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			if pc == co.mark {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
		skip += n
	}
}

// describeCall names an operation the code asked for, for a misuse report.
func describeCall(kind opKind, name string) string {
	switch kind {
	case opStep:
		return fmt.Sprintf("step %q", name)
	case opHook:
		return fmt.Sprintf("a hook (token %q)", name)
	case opAttr:
		return fmt.Sprintf("attributes (keys %q)", name)
	}
	return "a sleep or timer"
}
