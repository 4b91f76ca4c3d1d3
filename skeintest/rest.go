package skeintest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// WaitDeactivated waits until the run has ended and come to rest
// (run_deactivated): its cleanup hook has run, no step of it runs any more
// and its compensations have all ended (a saga: a failed run of a workflow
// defined WithCompensateOnFailure, a run cancelled with
// client.CancelCompensating). It returns the run as stored; its
// Compensations say how they went. Skein's Run.WaitDeactivated does not
// move the virtual clock; this does, as Env.Wait does, so a compensation
// retried with a backoff ends without the test advancing the clock. It
// fails the test if the run is held or does not come to rest within the
// environment's timeout, saying what is still under way.
func (e *Env) WaitDeactivated(runID string) *world.Run {
	e.t.Helper()
	return e.waitFor("WaitDeactivated", runID, (*world.Run).Deactivated, "come to rest", e.describeRest)
}

// describeRest says what keeps a run from its rest, for a failure message:
// what describe says, and the compensations under way.
func (e *Env) describeRest(runID string) string {
	parts := []string{e.describe(runID)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), time.Second)
	defer cancel()
	page, err := e.lw.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		return parts[0]
	}
	for _, s := range page.Items {
		comp := s.Compensation
		if s.Status != world.StepStatusCompensating || comp == nil {
			continue
		}
		d := fmt.Sprintf("compensation %q of step %q (attempt %d)", comp.Step, s.StepName, comp.Attempt)
		if !comp.RetryAfter.IsZero() {
			d += ", retrying at " + fmtTime(comp.RetryAfter)
		}
		parts = append(parts, d)
	}
	r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err == nil && r.Compensations.Owed > 0 {
		parts = append(parts, fmt.Sprintf("%d compensation(s) owed, not started", r.Compensations.Owed))
	}
	return strings.Join(parts, "; ")
}

// CompensationAttempts counts the attempts of the compensation step comp
// (by name) in events: its comp_started events, over all the steps it
// undoes.
func CompensationAttempts(events []world.Event, comp string) int {
	n := 0
	for _, ev := range events {
		if d, ok := ev.Data.(*world.CompStarted); ok && d.Compensation == comp {
			n++
		}
	}
	return n
}
