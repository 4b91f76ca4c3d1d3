package webui

import (
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// What the dashboard shows of compensations: the run's counts, each
// compensable step's compensation with its attempts, a marker on the runs
// list; the timeline rows come from the shared model.

// compView is a step's compensation on the run page.
type compView struct {
	Step   string // the compensation step's name
	Status string // not started, compensating, compensated, compensation_failed
	// Attempt is the attempt as retries count it, Lost those interrupted.
	Attempt, Lost int
	RetryAfter    time.Time
	Error         []errorLine
	Attempts      []attemptView
}

// newCompView is step st of run r's compensation, nil when it declared
// none. A completed step's compensation is "not started", or "not run"
// when the run ended without asking for it.
func newCompView(r *world.Run, st *world.Step, attempts []attemptView) *compView {
	c := st.Compensation
	if c == nil {
		return nil
	}
	v := &compView{Step: c.Step, Status: "not started", Attempt: c.Attempt - c.Interrupted, Lost: c.Interrupted,
		Error: errorChain(c.Error), Attempts: attempts}
	switch st.Status {
	case world.StepStatusCompensating, world.StepStatusCompensated, world.StepStatusCompensationFailed:
		v.Status = string(st.Status)
	case world.StepStatusCompleted:
		if r.Status.Terminal() && !r.Compensate {
			v.Status = "not run"
		}
	}
	if st.Status == world.StepStatusCompensating {
		v.RetryAfter = c.RetryAfter
	}
	return v
}

// compAttempts reads the attempts of each step's compensation from the
// log, by step ID.
func compAttempts(events []world.Event) map[string][]attemptView {
	out := map[string][]attemptView{}
	for _, ev := range events {
		list := out[ev.CorrelationID]
		last := len(list) - 1
		end := func(outcome string, e *world.ErrorData) {
			if last >= 0 && list[last].Outcome == "running" {
				list[last].Outcome = outcome
				if e != nil {
					list[last].Error = e.Message
				}
				list[last].Took = fmtDuration(ev.CreatedAt.Sub(list[last].Started))
			}
		}
		switch d := ev.Data.(type) {
		case *world.CompStarted:
			end("lost", &world.ErrorData{Message: "its executor was lost; another attempt took the compensation over"})
			list = append(list, attemptView{N: d.Attempt, Started: ev.CreatedAt, Outcome: "running"})
		case *world.CompRetryScheduled:
			end("failed", d.Error)
		case *world.CompFailed:
			end("failed", d.Error)
		case *world.CompSucceeded:
			end("completed", nil)
		default:
			continue
		}
		out[ev.CorrelationID] = list
	}
	return out
}

// compCounts is a run's compensation counts in words ("2 succeeded, 1
// failed"), and whether its end asked for them; "" when there is nothing
// to say.
func compCounts(r *world.Run) string {
	s := timeline.CompCounts(r)
	if r.Compensate {
		asked := "asked for by the run's failure"
		if r.Status == world.RunStatusCancelled {
			asked = "asked for by the cancellation"
		}
		if s == "" {
			return asked
		}
		s += " (" + asked + ")"
	}
	return s
}

// compMark is the runs list's marker of a run's compensations: failed
// when one failed for good, compensating while some are still to run.
func compMark(r *world.Run) string {
	switch {
	case r.Compensations.Failed > 0:
		return "compensation failed"
	case r.Compensations.Running > 0 || r.Compensate && r.Compensations.Owed > 0:
		return "compensating"
	}
	return ""
}
