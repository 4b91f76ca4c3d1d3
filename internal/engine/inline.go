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

// inlineSteps are the steps a session runs in its invocation.
type inlineSteps struct {
	inflight map[string]context.CancelFunc // by step ID; cancels the attempt
	comping  map[string]bool               // the inflight attempts that are compensations
	solo     func() outcome                // runs the one step in flight, not started yet (launch)
	results  chan outcome                  // outcomes of the steps running as goroutines
	late     []outcome                     // outcomes that arrived after the workflow finished

	// moved receives the session's outcome from the goroutine it moved to
	// while its solo step ran long (runSolo); made at the first move.
	moved chan error
}

// launch runs a step attempt inline: as a goroutine, or, when it is the
// only step in flight, held as the session's solo step, which waitInflight
// runs on the session's own goroutine (see runSolo).
func (s *session) launch(ctx context.Context, o *op, st *world.Step) {
	delete(s.deferred, o.id)
	x := execOf(s.meta, st, o.input)
	x.inline = true
	s.start(ctx, o.id, func(ctx context.Context) outcome { return s.e.steps.runStep(ctx, x) })
}

// start runs an attempt inline under id (a step's, or a compensation's):
// as a goroutine, or held as the solo step when it is the only one in
// flight.
func (s *session) start(ctx context.Context, id string, run func(context.Context) outcome) {
	ctx, cancel := context.WithCancel(ctx)
	s.inflight[id] = cancel
	ctx = s.stepContext(ctx)
	step := func() outcome { return run(ctx) }
	if len(s.inflight) == 1 {
		s.solo = step
		return
	}
	s.spawnSolo() // more than one step: they all run as goroutines
	s.spawn(step)
}

// spawn runs a step attempt as a goroutine that delivers its outcome to
// s.results.
func (s *session) spawn(step func() outcome) {
	go func() {
		s.results <- step()
	}()
}

// spawnSolo starts the solo step, if any, as a goroutine.
func (s *session) spawnSolo() {
	if step := s.solo; step != nil {
		s.solo = nil
		s.spawn(step)
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
func (s *session) runSolo(ctx context.Context, wake time.Duration) error {
	step := s.solo
	s.solo = nil
	if s.moved == nil {
		s.moved = make(chan error, 1)
	}
	var state atomic.Int32   // soloRunning, soloMoved or soloDone
	state.Store(soloRunning) // publishes the session to the timer's goroutine
	t := time.AfterFunc(wake, func() {
		if !state.CompareAndSwap(soloRunning, soloMoved) {
			return // the step ended first
		}
		if err := s.loop(ctx); !errors.Is(err, errMoved) {
			s.moved <- err
		}
	})
	o := step()
	if state.CompareAndSwap(soloRunning, soloDone) {
		t.Stop()
		s.receive(o)
		return nil
	}
	s.results <- o
	return errMoved
}

// States of a solo step run by runSolo.
const (
	soloRunning int32 = iota
	soloMoved         // the session moved to the timer's goroutine
	soloDone          // the step ended on the session's goroutine
)

func (s *session) receive(o outcome) {
	if cancel := s.inflight[o.stepID]; cancel != nil {
		cancel()
		delete(s.inflight, o.stepID)
		delete(s.comping, o.stepID)
	}
	if o.kind == outAbandoned {
		return
	}
	s.deliver(o)
}
