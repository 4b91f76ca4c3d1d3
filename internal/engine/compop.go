package engine

// Compensations the workflow asks for while its run is active
// (Context.Compensate): the replayer's side. A step's compensation is no
// operation of its own: it is recorded by comp_* events correlated to the
// step (world/compensation.go), which replay applies to the step's op. The
// session starts an attempt with comp_started (build), runs it inline
// (launchComp, runComp in compensate.go) and delivers its outcome to the
// workflow before committing it, as it does a step's.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// TypeNoCompensation is the failure of a compensation asked for a step
// whose step_created records none: the step was created by code that did
// not declare it (an older version of the workflow).
const TypeNoCompensation = "NoCompensationError"

// compState is the progress of a step's compensation, as the log has it
// (and the outcomes delivered before they commit).
type compState struct {
	wanted     int64 // when the code asked for it (settlement order then)
	started    bool  // an attempt has been recorded (comp_started)
	running    bool  // an attempt runs under lease (not waiting for a retry)
	attempt    int
	lost       int
	leaseUntil time.Time
	retryAfter time.Time
	settled    bool
	failure    *world.ErrorData
}

// StepWithCompensation asks for a step that declares comp, the name of the
// step that undoes it: its step_created records the name, and the
// workflow may then compensate it (Compensate); a run whose end asks for
// it compensates it after the end (rest.go).
func (c *Context) StepWithCompensation(name string, input json.RawMessage, comp string) *Future {
	f := c.Step(name, input)
	f.o.compDeclared = comp
	return f
}

// Compensation is a compensation the workflow asked for (Context.Compensate).
type Compensation struct{ o *op }

// Compensate asks for the compensation of f, a step that completed: it
// starts at the workflow's next suspension, and Done reports when it has
// ended. Asking again for the same step returns the same compensation. A
// step whose step_created records no compensation fails at once
// (TypeNoCompensation): the log, not the code, says what a step declared.
func (c *Context) Compensate(f *Future) *Compensation {
	o := f.o
	c.r.enter("Compensate")
	if o.comp != nil {
		return &Compensation{o: o}
	}
	o.comp = &compState{wanted: c.r.settles}
	if o.compLogged == "" {
		o.comp.settled = true
		o.comp.failure = &world.ErrorData{Type: TypeNoCompensation, Fatal: true,
			Message: fmt.Sprintf("step %q (%s) recorded no compensation when it was created", o.name, o.id)}
		return &Compensation{o: o}
	}
	c.r.openComps[o.id] = o
	return &Compensation{o: o}
}

// Done reports whether the compensation has ended.
func (h *Compensation) Done() bool { return h.o.comp.settled }

// Failure returns why the compensation failed for good, nil when it
// succeeded (or has not ended).
func (h *Compensation) Failure() *world.ErrorData { return h.o.comp.failure }

// Step returns the name of the compensation step, as the log records it
// (empty when it records none).
func (h *Compensation) Step() string { return h.o.compLogged }

// Attempt returns the compensation's latest attempt as its retry policy
// counts it.
func (h *Compensation) Attempt() int { return max(h.o.comp.attempt-h.o.comp.lost, 1) }

// consumeComp applies a committed comp_* event to its step's op. One the
// code did not ask for diverges: the log compensates a step the code does
// not.
func (r *replayer) consumeComp(ev *world.Event) {
	o := r.byID[ev.CorrelationID]
	if o == nil || o.kind != opStep {
		r.diverge(ev, "the workflow has no such step")
		return
	}
	if o.comp == nil || o.comp.settled && o.compLogged == "" {
		r.diverge(ev, fmt.Sprintf("the workflow has not asked to compensate step %q (%s)", o.name, o.id))
		return
	}
	c := o.comp
	switch d := ev.Data.(type) {
	case *world.CompStarted:
		c.started, c.running = true, true
		c.attempt, c.lost = d.Attempt, d.Interrupted
		c.leaseUntil, c.retryAfter = d.LeaseExpiresAt, time.Time{}
	case *world.CompRetryScheduled:
		r.compRetrying(o, d.RetryAfter)
	case *world.CompSucceeded:
		r.settleComp(o, nil)
	case *world.CompFailed:
		r.settleComp(o, d.Error)
	}
}

func (r *replayer) compRetrying(o *op, at time.Time) {
	o.comp.running = false
	o.comp.retryAfter = at
	o.comp.leaseUntil = time.Time{}
}

func (r *replayer) settleComp(o *op, failure *world.ErrorData) {
	c := o.comp
	if c.settled {
		return
	}
	c.settled, c.running, c.failure = true, false, failure
	c.leaseUntil, c.retryAfter = time.Time{}, time.Time{}
	delete(r.openComps, o.id)
}

// owesCompensation reports whether a step of the run completed with a
// compensation recorded that has not ended: a run whose end asks for its
// compensations is not deactivated with its terminal event then.
func (r *replayer) owesCompensation() bool {
	for _, o := range r.ops {
		if o.kind == opStep && o.compLogged != "" && o.settled && o.failure == nil && (o.comp == nil || !o.comp.settled) {
			return true
		}
	}
	return false
}
