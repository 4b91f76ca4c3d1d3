package sdk

import (
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
// or an earlier one (a *RegistrationError, Problem
// RegistrationUnregisteredCompensation).
//
// Every call of s records the name of its compensation with the step
// (step_created), so the log says what undoes it. Once the step has
// completed, its compensation runs when the workflow calls Compensate, or
// after a failure of a workflow defined WithCompensateOnFailure, or after
// a cancellation that asks for it (CancelCompensating). It is no step of
// its own: its attempts are recorded on the step it undoes (comp_started,
// comp_retry_scheduled, comp_succeeded, comp_failed), with comp's retry
// policy and timeout, and the step moves to compensated or
// compensation_failed.
func WithCompensation[I, O any](s *Step[I, O], comp *Step[Compensation[I, O], struct{}]) *Step[I, O] {
	s.hasComp = true
	s.comp = nil
	if comp != nil {
		s.comp = comp
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
			return &RegistrationError{Kind: "step", Name: d.Name(), Problem: RegistrationUnregisteredCompensation}
		}
		found := r.defs[defKey(comp)] == comp
		for _, o := range defs {
			found = found || o == comp
		}
		if !found {
			return &RegistrationError{Kind: "step", Name: d.Name(), Problem: RegistrationUnregisteredCompensation, Compensation: comp.Name()}
		}
	}
	return nil
}

// compEntry is a step the workflow called whose compensation has not run.
type compEntry struct {
	p    *stepPromise
	step string
}

// CompensationError is what Compensate returns for a compensation that
// failed for good (after its retries): the step it was to undo and the
// compensation's error (a *StepError naming the compensation step).
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
// one after the other; then the workflow continues (catch a failure,
// compensate, return a result). Each compensation is recorded on the step
// it undoes (comp_* events) and retried by its own step's policy; replay
// takes its outcome from the log, so Compensate is deterministic. Each
// completed step is compensated at most once: a later Compensate skips the
// steps compensated already. Steps that failed are not compensated, nor
// are steps still running (await them first if they must be): a later
// Compensate covers them once they complete. In a fan-out only the
// branches that completed are compensated.
//
// A compensation that fails for good does not stop the others; Compensate
// then returns the failures, each a *CompensationError, joined.
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
		h := c.ec.Compensate(e.p.f)
		c.ec.Await(h.Done)
		if fail := h.Failure(); fail != nil {
			id := e.p.f.ID()
			var cause error = &StepError{Step: h.Step(), StepID: id, Attempt: h.Attempt(), Err: c.reg.decode(fail)}
			if h.Step() == "" { // the log records no compensation for the step
				cause = c.reg.decode(fail)
			}
			errs = append(errs, &CompensationError{Step: e.step, StepID: id, Err: cause})
		}
	}
	return errors.Join(errs...)
}

// track records a call of s whose compensation Compensate may run.
func (s *Step[I, O]) track(c *wfContext, p *stepPromise) {
	if s.comp == nil {
		return
	}
	c.comps = append(c.comps, &compEntry{p: p, step: s.name})
}

// compName is the name of the step's compensation, "" when it declares
// none.
func (s *Step[I, O]) compName() string {
	if s.comp == nil {
		return ""
	}
	return s.comp.Name()
}

// WithCompensateOnFailure makes a run of w that fails compensate its
// completed steps: the failure is recorded at once (Run.Result returns it
// while the compensations run; WaitDeactivated waits for them), and then
// every completed step that declared a compensation and has not been
// compensated already (by Compensate) is compensated, the most recently
// completed first, one after the other, including the steps the run left
// running that complete after its end. The run is deactivated once they
// have all ended; RunInfo.Compensations says how they went. It returns w;
// call it where the workflow is defined.
func (w *Workflow[I, O]) WithCompensateOnFailure() *Workflow[I, O] {
	w.compensateOnFailure = true
	return w
}
