package sdk

import (
	"context"
	"fmt"
	"sort"

	"github.com/skeinflow/skein/world"
)

// CancelOption tunes Client.Cancel.
type CancelOption func(*cancelOptions)

type cancelOptions struct{ compensate bool }

// CancelCompensating makes a cancellation compensate the run's completed
// steps that declared a compensation (WithCompensation), after the run's
// end, the most recently completed first: the run ends cancelled at once,
// and is deactivated once the compensations have ended
// (RunInfo.Compensations says how they went).
func CancelCompensating() CancelOption {
	return func(o *cancelOptions) { o.compensate = true }
}

// CompensationInfo says how a run's compensations went.
type CompensationInfo struct {
	// Requested is set when the run's end asked for its completed steps
	// to be compensated (WithCompensateOnFailure, CancelCompensating).
	Requested bool
	// Owed counts the completed steps that declared a compensation which
	// has not started; Running those compensating; Succeeded and Failed
	// the compensations that ended.
	Owed, Running, Succeeded, Failed int
	// Failures are the compensations that failed for good, each a
	// *CompensationError naming the step it was to undo, in the order the
	// compensations ran (the most recently completed step first), as
	// Compensate joins them (Client.GetRun, Run.Info and WaitDeactivated
	// fill it in; ListRuns does not).
	Failures []*CompensationError
}

// Status is "" when the run has had no compensation, else
// world.StepStatusCompensating (a compensation runs, or the run's end asked
// for compensations that have not all started),
// world.StepStatusCompensationFailed (at least one compensation failed for
// good, see Failures, and none runs any more) or
// world.StepStatusCompensated (every compensation that ran succeeded).
func (c CompensationInfo) Status() world.StepStatus {
	switch {
	case c.Running > 0 || c.Requested && c.Owed > 0:
		return world.StepStatusCompensating
	case c.Failed > 0:
		return world.StepStatusCompensationFailed
	case c.Succeeded > 0:
		return world.StepStatusCompensated
	}
	return ""
}

func compensationInfo(r *world.Run) CompensationInfo {
	n := r.Compensations
	return CompensationInfo{Requested: r.Compensate, Owed: n.Owed, Running: n.Running, Succeeded: n.Succeeded, Failed: n.Failed}
}

// fullRunInfo is runInfo with the failed compensations read from the
// run's steps.
func (c *Client) fullRunInfo(ctx context.Context, r *world.Run) (*RunInfo, error) {
	info := c.runInfo(r)
	if r.Compensations.Failed == 0 {
		return info, nil
	}
	var cursor string
	var order []*world.Step
	for {
		p, err := c.w.ListSteps(ctx, &world.ListStepsParams{RunID: r.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, fmt.Errorf("workflow: the compensations of run %s: %w", r.RunID, err)
		}
		for _, st := range p.Items {
			if st.Status != world.StepStatusCompensationFailed || st.Compensation == nil {
				continue
			}
			comp := st.Compensation
			cause := &StepError{Step: comp.Step, StepID: st.StepID, Attempt: max(comp.Attempt-comp.Interrupted, 1)}
			if comp.Error != nil {
				cause.Err = c.reg.decode(comp.Error)
			}
			info.Compensations.Failures = append(info.Compensations.Failures, &CompensationError{Step: st.StepName, StepID: st.StepID, Err: cause})
			order = append(order, &st)
		}
		if !p.HasMore {
			sortFailures(info.Compensations.Failures, order)
			return info, nil
		}
		cursor = p.Cursor
	}
}

// sortFailures puts failures (of the steps order holds, index for index)
// in the order the compensations ran, as Compensate's joined error: the
// compensations run one after the other, so by the time each failed for
// good; at the same instant, the most recently completed step first.
func sortFailures(failures []*CompensationError, order []*world.Step) {
	idx := make([]int, len(failures))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		a, b := order[idx[i]], order[idx[j]]
		if c := a.Compensation.EndedAt.Compare(b.Compensation.EndedAt); c != 0 {
			return c < 0
		}
		if c := a.CompletedAt.Compare(b.CompletedAt); c != 0 {
			return c > 0
		}
		return a.StepID > b.StepID
	})
	sorted := make([]*CompensationError, len(failures))
	for i, k := range idx {
		sorted[i] = failures[k]
	}
	copy(failures, sorted)
}
