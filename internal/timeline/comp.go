package timeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// comp follows a compensation's event (ev, correlated to the step it
// undoes, whose row is step): the step's row takes the step's new status
// (compensating, compensated, compensation_failed), and the compensation's
// own row, added below the others at its first attempt, its attempts,
// retries and outcome.
func (b *builder) comp(ev world.Event, step *Row) {
	if step == nil {
		return // a log that does not start at the step's creation
	}
	at, corr := ev.CreatedAt, ev.CorrelationID
	r := b.comps[corr]
	switch d := ev.Data.(type) {
	case *world.CompStarted:
		if r == nil {
			r = &Row{Name: "undo " + step.Name, Status: "pending", First: at, Compensates: step.Name}
			if d.Compensation != "" {
				r.Name += ": " + b.o.Name(d.Compensation)
			}
			b.rows = append(b.rows, r)
			b.comps[corr] = r
		}
		step.Status = string(world.StepStatusCompensating)
		r.started(at, d.Attempt, d.Interrupted)
	case *world.CompRetryScheduled:
		if r != nil {
			r.ended(Failed, "retrying", b.o.Text(errMessage(d.Error)), at)
			r.begin(at, Pending)
		}
	case *world.CompSucceeded:
		step.Status = string(world.StepStatusCompensated)
		if r != nil {
			r.ended(OK, "completed", r.Note, at)
			r.End(at)
		}
	case *world.CompFailed:
		step.Status = string(world.StepStatusCompensationFailed)
		if r != nil {
			r.ended(Failed, "failed", b.o.Text(errMessage(d.Error)), at)
			r.End(at)
		}
	}
}

// ended marks the open attempt as kind k and the row's status and note.
func (r *Row) ended(k Kind, status, note string, at time.Time) {
	if r.Open != nil {
		r.Open.Kind = k
	}
	r.Status, r.Note, r.Last = status, note, at
}

func errMessage(e *world.ErrorData) string {
	if e == nil {
		return ""
	}
	return e.Message
}

// CompCounts is a run's compensation counts in words ("2 succeeded, 1
// failed, 1 owed"), "" when there is nothing to count. A run that ended
// without asking for compensation owes none: none will run; a run that
// has not ended owes none yet ("2 to run should the run fail").
func CompCounts(r *world.Run) string {
	c := r.Compensations
	if r.Status.Terminal() && !r.Compensate {
		c.Owed = 0
	}
	owed := "owed"
	if !r.Status.Terminal() {
		// Nothing is owed yet: only a failure (or a cancellation) that
		// asks for it would run these.
		owed = "to run should the run fail"
	}
	var parts []string
	for _, p := range []struct {
		n    int
		word string
	}{{c.Running, "running"}, {c.Owed, owed}, {c.Succeeded, "succeeded"}, {c.Failed, "failed"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	return strings.Join(parts, ", ")
}
