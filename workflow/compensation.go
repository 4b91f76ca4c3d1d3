package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Compensation is the input of a compensation step: the input the step it
// undoes was called with and the result that step returned.
type Compensation[I, O any] struct {
	Input  I
	Result O
}

// WithCompensation declares comp as the undo of s (a refund for a charge,
// say) and returns s. (It is a function rather than a method of Step
// because Go cannot express a method of Step[I, O] that takes a
// Step[Compensation[I, O], ...].) Call it where the step is defined, before the step is
// registered: Register refuses s unless comp is registered in the same call
// or an earlier one (an *UnregisteredCompensationError).
//
// The compensations of a run's completed steps run when the workflow calls
// Compensate: each as an ordinary durable step of the run, with its own
// retries, recorded in the log like any other step.
func WithCompensation[I, O any](s *Step[I, O], comp *Step[Compensation[I, O], struct{}]) *Step[I, O] {
	s.hasComp = true
	s.comp, s.compRun = nil, nil
	if comp != nil {
		s.comp = comp
		s.compRun = func(ctx Context, c Compensation[I, O]) error {
			_, err := comp.Call(ctx, c)
			return err
		}
	}
	return s
}

// compensation reports what WithCompensation declared, for Register.
func (s *Step[I, O]) compensation() (Definition, bool) {
	return s.comp, s.hasComp
}

// compensable is a step whose declared compensation Register checks.
type compensable interface {
	compensation() (Definition, bool)
}

// UnregisteredCompensationError is returned by Registry.Register (and
// Replace) for a step whose compensation (WithCompensation) is nil or is
// not registered in the same call or an earlier one. Nothing of the call is
// registered then.
type UnregisteredCompensationError struct {
	Step         string
	Compensation string // empty for a nil compensation
}

func (e *UnregisteredCompensationError) Error() string {
	if e.Compensation == "" {
		return fmt.Sprintf("workflow: Register: step %q declares a nil compensation", e.Step)
	}
	return fmt.Sprintf("workflow: Register: the compensation %q of step %q is not registered "+
		"(register it with the step, in the same call or an earlier one)", e.Compensation, e.Step)
}

// checkCompensations refuses a step of defs whose compensation is neither
// among defs nor registered already. The caller holds r.mu.
func (r *Registry) checkCompensations(defs []Definition) error {
	for _, d := range defs {
		c, ok := d.(compensable)
		if !ok {
			continue
		}
		comp, declared := c.compensation()
		if !declared {
			continue
		}
		if comp == nil {
			return &UnregisteredCompensationError{Step: d.Name()}
		}
		found := r.defs[defKey(comp)] == comp
		for _, o := range defs {
			found = found || o == comp
		}
		if !found {
			return &UnregisteredCompensationError{Step: d.Name(), Compensation: comp.Name()}
		}
	}
	return nil
}

// compEntry is a step the workflow called whose compensation has not run.
type compEntry struct {
	p    *stepPromise
	step string
	// run calls the compensation with the step's result and waits for it.
	run func(ctx Context, result json.RawMessage) error
}

// CompensationError is what Compensate returns for a compensation that
// failed for good (after its retries): the step it was to undo and the
// compensation's error (a *StepError).
type CompensationError struct {
	Step   string // the step compensated
	StepID string
	Err    error
}

func (e *CompensationError) Error() string {
	return fmt.Sprintf("compensation of step %q (%s) failed: %v", e.Step, e.StepID, e.Err)
}

// Unwrap returns the compensation's error.
func (e *CompensationError) Unwrap() error { return e.Err }

// Compensate runs the compensations of the steps this run has completed so
// far that declared one (WithCompensation), in reverse order of completion,
// one after the other, each as a durable step of the run; then the workflow
// continues. Each completed step is compensated at most once: a later
// Compensate skips the steps compensated already. Steps that failed are
// not compensated, nor are steps still running (await them first if they
// must be): a later Compensate covers them once they complete. In a
// fan-out only the branches that completed are compensated.
//
// A compensation that fails for good does not stop the others; Compensate
// then returns the failures, each a *CompensationError, joined.
// Compensate is deterministic: on replay it runs the same compensations.
func Compensate(ctx Context) error {
	c := ctx.impl()
	var ready, rest []*compEntry
	for _, e := range c.comps {
		switch _, done := e.p.state(); {
		case !done:
			rest = append(rest, e)
		case !e.p.failed():
			ready = append(ready, e)
		}
	}
	c.comps = rest
	sort.SliceStable(ready, func(i, j int) bool {
		oi, _ := ready[i].p.state()
		oj, _ := ready[j].p.state()
		return oi > oj
	})
	var errs []error
	for _, e := range ready {
		raw, _ := e.p.outcome()
		if err := e.run(ctx, raw); err != nil {
			errs = append(errs, &CompensationError{Step: e.step, StepID: e.p.f.ID(), Err: err})
		}
	}
	return errors.Join(errs...)
}

// track records a call of s whose compensation Compensate may run.
func (s *Step[I, O]) track(c *wfContext, p *stepPromise, in I) {
	if s.comp == nil {
		return
	}
	comp := s.compRun
	c.comps = append(c.comps, &compEntry{p: p, step: s.name, run: func(ctx Context, raw json.RawMessage) error {
		var out O
		if err := unmarshal(raw, &out); err != nil {
			return &SerializationError{What: fmt.Sprintf("the result of step %q", s.name), Decode: true, Err: err}
		}
		return comp(ctx, Compensation[I, O]{Input: in, Result: out})
	}})
}

// WithCompensateOnFailure makes a run of w that fails compensate first: when
// the workflow function returns an error, the run waits for the steps it
// started that declared a compensation and still run, then runs Compensate,
// and only then fails, with the function's error joined to the
// compensations' failures (*CompensationError) if any did not succeed.
// Steps the workflow compensated itself (Compensate) are not compensated
// again. A run that panics or is cancelled (Client.Cancel) is not
// compensated. It returns w; call it where the workflow is defined.
func (w *Workflow[I, O]) WithCompensateOnFailure() *Workflow[I, O] {
	w.compensateOnFailure = true
	return w
}

// compensateFailure waits for the compensable steps still running, runs
// their compensations and those of the steps completed, and returns the
// run's error: err, joined to the compensations' failures.
func (c *wfContext) compensateFailure(err error) error {
	c.ec.Await(func() bool {
		for _, e := range c.comps {
			if _, done := e.p.state(); !done {
				return false
			}
		}
		return true
	})
	if cerr := Compensate(c); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}
