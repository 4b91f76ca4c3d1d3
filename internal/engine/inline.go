package engine

// Running steps inline: as goroutines, or the one step in flight on the
// session's own goroutine (the solo step), and taking their outcomes in.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/world"
)

// inflight decides which of a session's steps run here, now, later or
// elsewhere: it starts the steps a commit started inline (launch, the solo
// step on the session's goroutine, runSolo), waits for them (waitInflight),
// holds back or enqueues the excess (deferred, queued, enqueueSteps),
// reads other invocations' step leases (leases, steplease.go) and, with
// nothing to run, sends the message that wakes the run (idle). It holds the
// parts below it and the session's run state and span; what it needs of
// the session (its replayer, the workflow, the loop, the deadline) it asks
// through run, the narrow view the session passes down (it holds no
// pointer to the session).
type inflight struct {
	e     *parts
	runID string
	st    *runState // the session's loaded state (load.go): meta, lastSeq
	span  *runSpan  // the session's span (trace.go): steps' spans are its children
	run   inflightRun

	inlineSteps
	queued   map[string]bool      // steps this session queued for background executors
	deferred map[string]time.Time // excess steps held back, until when (holdBack, unhold)
	// deferTimes counts the steps of deferred held back until each time: a
	// commit holds back all its excess until one time.
	deferTimes  map[time.Time]int
	deferLooked int                  // held-back steps flushDeferred looked at (for tests)
	leases      map[string]stepLease // current step leases read from the World (readStepLeases)
	lastPoll    time.Time            // when the session last read the log for others' events
}

// inflightRun is what the steps in flight ask of the session: its
// replayer (a rebuild replaces it), delivering an outcome to the workflow,
// reading what others appended, whether deliveries wait for a commit, the
// deadline, and the loop itself, which runSolo moves to another goroutine
// while the solo step runs long.
type inflightRun interface {
	replay() *replayer
	deliver(o outcome)
	loadNew(ctx context.Context, consume bool) (int, error)
	uncommitted() bool
	stopsAt() time.Time
	draining() bool
	loop(ctx context.Context) error
}

// inlineSteps are the steps a session runs in its invocation.
type inlineSteps struct {
	running map[string]context.CancelFunc // by step ID; cancels the attempt
	comping map[string]bool               // the running attempts that are compensations
	solo    func() outcome                // runs the one step in flight, not started yet (launch)
	results chan outcome                  // outcomes of the steps running as goroutines
	late    []outcome                     // outcomes that arrived after the workflow finished

	// moved receives the session's outcome from the goroutine it moved to
	// while its solo step ran long (runSolo); made at the first move.
	moved chan error
}

// launch runs a step attempt inline: as a goroutine, or, when it is the
// only step in flight, held as the session's solo step, which waitInflight
// runs on the session's own goroutine (see runSolo).
func (in *inflight) launch(ctx context.Context, o *op, st *world.Step) {
	in.unhold(o.id)
	x := execOf(in.st.meta, st, o.input)
	x.inline = true
	in.start(ctx, o.id, func(ctx context.Context) outcome { return in.e.steps.runStep(ctx, x) })
}

// start runs an attempt inline under id (a step's, or a compensation's):
// as a goroutine, or held as the solo step when it is the only one in
// flight.
func (in *inflight) start(ctx context.Context, id string, run func(context.Context) outcome) {
	ctx, cancel := context.WithCancel(ctx)
	in.running[id] = cancel
	ctx = in.span.stepContext(ctx)
	step := func() outcome { return run(ctx) }
	if len(in.running) == 1 {
		in.solo = step
		return
	}
	in.spawnSolo() // more than one step: they all run as goroutines
	in.spawn(step)
}

// spawn runs a step attempt as a goroutine that delivers its outcome to
// s.results.
func (in *inflight) spawn(step func() outcome) {
	go func() {
		in.results <- step()
	}()
}

// spawnSolo starts the solo step, if any, as a goroutine.
func (in *inflight) spawnSolo() {
	if step := in.solo; step != nil {
		in.solo = nil
		in.spawn(step)
	}
}

// runSolo runs the solo step, the only step in flight, on the session's own
// goroutine, where waitInflight would otherwise wait for it: a serial
// workflow then hands control between goroutines only at the coroutine's
// switches, with no goroutine per step and no thread woken to run one.
// The session still wakes when it must while the step runs: if the step is
// still running after wake, when waitInflight's timer would have fired (a
// timer due, the event poll, the deadline), the session carries on on a new
// goroutine, with the step in flight as if it had been spawned, and this
// goroutine delivers its outcome to s.results when it ends and returns
// errMoved. The session's final outcome then reaches continueRun through
// s.moved.
func (in *inflight) runSolo(ctx context.Context, wake time.Duration) error {
	step := in.solo
	in.solo = nil
	if in.moved == nil {
		in.moved = make(chan error, 1)
	}
	var state atomic.Int32   // soloRunning, soloMoved or soloDone
	state.Store(soloRunning) // publishes the session to the timer's goroutine
	t := time.AfterFunc(wake, func() {
		if !state.CompareAndSwap(soloRunning, soloMoved) {
			return // the step ended first
		}
		if err := in.run.loop(ctx); !errors.Is(err, errMoved) {
			in.moved <- err
		}
	})
	o := step()
	if state.CompareAndSwap(soloRunning, soloDone) {
		t.Stop()
		in.receive(o)
		return nil
	}
	in.results <- o
	return errMoved
}

// States of a solo step run by runSolo.
const (
	soloRunning int32 = iota
	soloMoved         // the session moved to the timer's goroutine
	soloDone          // the step ended on the session's goroutine
)

func (in *inflight) receive(o outcome) {
	if cancel := in.running[o.stepID]; cancel != nil {
		cancel()
		delete(in.running, o.stepID)
		delete(in.comping, o.stepID)
	}
	if o.kind == outAbandoned {
		return
	}
	in.run.deliver(o)
}
