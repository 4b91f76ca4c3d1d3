package world_test

import (
	"time"

	"github.com/skeinflow/skein/world"
)

// The model of compensation (world/compensation.go), written apart from
// Apply: a step that declared a compensation (mComp.declared) moves, once
// completed, to compensating (comp_started), then compensated or
// compensation_failed; the run counts its compensations (mRun.comps) and
// run_deactivated waits for them (see the entry of run_deactivated).

// mComp is a step's compensation.
type mComp struct {
	declared    bool
	attempt     int
	interrupted int
	retryAfter  time.Time
	leaseUntil  time.Time
}

// compJudge is what every comp_* event refuses: a missing step, a
// deactivated run, a step that declared no compensation, and (for all but
// comp_started) a step not compensating.
func compJudge(m *propModel, o propOp, r mRun, started bool) (mStep, outcome) {
	st, ok := m.steps[key(o.run, o.corr)]
	switch {
	case !ok:
		return st, refused(world.ErrNotFound)
	case r.deactivated:
		return st, refused(world.ErrGone)
	case !st.comp.declared:
		return st, refused(world.ErrConflict)
	case !started && st.status != world.StepStatusCompensating:
		return st, refused(world.ErrConflict)
	}
	return st, outcome{}
}

// compEnding is the rule of comp_succeeded (to compensated) and comp_failed.
func compEnding(to world.StepStatus) rule {
	return rule{
		judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
			_, out := compJudge(m, o, r, false)
			return out
		},
		apply: func(m *propModel, o propOp, _ time.Time) {
			st := m.steps[key(o.run, o.corr)]
			st.status = to
			st.comp.leaseUntil, st.comp.retryAfter = time.Time{}, time.Time{}
			m.steps[key(o.run, o.corr)] = st
			r := m.runs[o.run]
			r.comps.Running--
			if to == world.StepStatusCompensated {
				r.comps.Succeeded++
			} else {
				r.comps.Failed++
			}
			m.runs[o.run] = r
		},
	}
}

func compRules() map[world.EventType]rule {
	return map[world.EventType]rule{
		world.EventCompStarted: {
			judge: func(m *propModel, o propOp, r mRun, now time.Time) outcome {
				st, out := compJudge(m, o, r, true)
				switch {
				case out.err != nil:
					return out
				case st.status == world.StepStatusCompleted:
					return outcome{}
				case st.status != world.StepStatusCompensating:
					return refused(world.ErrConflict)
				case st.comp.retryAfter.After(now):
					return refused(world.ErrTooEarly)
				case st.comp.leaseUntil.After(now):
					return refused(world.ErrConflict) // another executor's lease
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, now time.Time) {
				ttl := o.data.(*world.CompStarted).LeaseTTL
				if ttl == 0 {
					ttl = world.DefaultStepLease
				}
				st := m.steps[key(o.run, o.corr)]
				r := m.runs[o.run]
				if st.status == world.StepStatusCompleted {
					r.comps.Owed--
					r.comps.Running++
				} else if !st.comp.leaseUntil.IsZero() {
					st.comp.interrupted++ // its lease expired with no outcome
				}
				m.runs[o.run] = r
				st.status = world.StepStatusCompensating
				st.comp.attempt++
				st.comp.leaseUntil, st.comp.retryAfter = now.Add(ttl), time.Time{}
				m.steps[key(o.run, o.corr)] = st
			}},
		world.EventCompRetryScheduled: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				_, out := compJudge(m, o, r, false)
				return out
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				st := m.steps[key(o.run, o.corr)]
				st.comp.retryAfter, st.comp.leaseUntil = o.data.(*world.CompRetryScheduled).RetryAfter, time.Time{}
				m.steps[key(o.run, o.corr)] = st
			}},
		world.EventCompSucceeded: compEnding(world.StepStatusCompensated),
		world.EventCompFailed:    compEnding(world.StepStatusCompensationFailed),
	}
}

// compMatches reports whether a stored step's compensation is the model's.
func compMatches(s world.Step, ms mStep) bool {
	c := s.Compensation
	if c == nil {
		return !ms.comp.declared
	}
	mc := ms.comp
	return mc.declared && c.Attempt == mc.attempt && c.Interrupted == mc.interrupted &&
		c.RetryAfter.Equal(mc.retryAfter) && c.LeaseExpiresAt.Equal(mc.leaseUntil)
}

// compStepMoves are the moves a step may make out of a terminal status:
// a completed step's compensation.
var compStepMoves = map[world.StepStatus][]world.StepStatus{
	world.StepStatusCompleted:    {world.StepStatusCompensating, world.StepStatusCompensated, world.StepStatusCompensationFailed},
	world.StepStatusCompensating: {world.StepStatusCompensated, world.StepStatusCompensationFailed},
}
