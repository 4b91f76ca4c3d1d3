package world_test

import (
	"maps"
	"math/bits"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// propModel is a model of the state machine, written apart from Apply: what
// each event needs and does, as the refusal table says. The property tests
// hold world.Apply (through propStore) to it.
//
// To extend it: a new event type is one entry in modelRules (and one
// generator in propEvent); a change to how an event is judged or what it
// does is a change to its entry (a new non-terminal run status, say, is a
// value of mRun.status the entries of the run and step events consider).
type propModel struct {
	runs  map[string]mRun
	steps map[string]mStep // run/step
	waits map[string]bool  // run/wait -> completed
	hooks map[string]mHook // active hooks by ID
	idem  map[string]bool  // idempotency keys used
}

type mRun struct {
	status world.RunStatus
	seq    int64  // the last sequence number
	attrs  uint32 // the attribute keys set: bit i is propAttrKey(i)
	// deactivated: run_deactivated appended; cleanup: the run's cleanup
	// state (world.CleanupPending and the rest, "" for none).
	deactivated bool
	cleanup     string
	// compensate: the run's end asked for compensation; comps: its
	// compensation counts (see transition_model_comp_test.go).
	compensate bool
	comps      world.Compensations
}

type mStep struct {
	status      world.StepStatus
	attempt     int
	interrupted int // starts that took over a running attempt (lost executor)
	retryAfter  time.Time
	leaseUntil  time.Time
	// comp is the step's compensation (comp.declared: it has one).
	comp mComp
}

type mHook struct{ run, token string }

// propOp is one proposed event.
type propOp struct {
	run, corr string
	data      world.EventData
	// invalid marks a payload the generator made malformed on purpose.
	invalid bool
}

// outcome is what the model expects of one event: a refusal (err, a
// sentinel), a request satisfied without an event (skip), or an event
// appended (conflict: hook_created recorded as hook_conflict).
type outcome struct {
	err      error
	skip     bool
	conflict bool
}

func refused(err error) outcome { return outcome{err: err} }

// rule is the model of one event type: judge decides, apply changes the
// model for an event appended. noRun marks run_created (the run need not
// exist).
type rule struct {
	noRun bool
	judge func(m *propModel, o propOp, r mRun, now time.Time) outcome
	apply func(m *propModel, o propOp, now time.Time)
}

func newPropModel() *propModel {
	return &propModel{runs: map[string]mRun{}, steps: map[string]mStep{}, waits: map[string]bool{}, hooks: map[string]mHook{}, idem: map[string]bool{}}
}

func (m *propModel) clone() *propModel {
	return &propModel{runs: maps.Clone(m.runs), steps: maps.Clone(m.steps), waits: maps.Clone(m.waits), hooks: maps.Clone(m.hooks), idem: maps.Clone(m.idem)}
}

// judge returns the model's expectation for o, and applies it when an
// event is appended.
func (m *propModel) judge(o propOp, now time.Time) outcome {
	if o.invalid {
		return refused(world.ErrInvalid)
	}
	rl := modelRules()[typeOf(o.data)]
	r, exists := m.runs[o.run]
	if !rl.noRun && !exists {
		return refused(world.ErrNotFound)
	}
	out := rl.judge(m, o, r, now)
	if out.err != nil || out.skip {
		return out
	}
	if !rl.noRun {
		r.seq++
		m.runs[o.run] = r
	}
	if !out.conflict {
		rl.apply(m, o, now)
	}
	return out
}

// endRun is the effect of a terminal event: the run's hooks and waits go.
func (m *propModel) endRun(run string, to world.RunStatus) {
	r := m.runs[run]
	r.status = to
	m.runs[run] = r
	for id, h := range m.hooks {
		if h.run == run {
			delete(m.hooks, id)
		}
	}
	for k := range m.waits {
		if strings.HasPrefix(k, run+"/") {
			delete(m.waits, k)
		}
	}
}

// modelRules is the refusal table and the effects, one entry per event.
func modelRules() map[world.EventType]rule {
	ending := func(to world.RunStatus) rule {
		return rule{
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				switch {
				case to == world.RunStatusCancelled && r.status == world.RunStatusCancelled:
					return outcome{skip: true}
				case r.status.Terminal():
					return refused(world.ErrConflict)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				m.endRun(o.run, to)
				r := m.runs[o.run]
				switch d := o.data.(type) {
				case *world.RunFailed:
					r.compensate = d.Compensate
				case *world.RunCancelled:
					r.compensate = d.Compensate
				}
				m.runs[o.run] = r
			},
		}
	}
	stepEnding := func(to world.StepStatus) rule {
		return rule{
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				st, ok := m.steps[key(o.run, o.corr)]
				switch {
				case !ok:
					return refused(world.ErrNotFound)
				case st.status.Terminal():
					return refused(world.ErrConflict)
				case r.status.Terminal() && st.status != world.StepStatusRunning:
					return refused(world.ErrGone) // a running step's outcome is still recorded
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				st := m.steps[key(o.run, o.corr)]
				st.status, st.leaseUntil, st.retryAfter = to, time.Time{}, time.Time{}
				m.steps[key(o.run, o.corr)] = st
				if to == world.StepStatusCompleted && st.comp.declared {
					r := m.runs[o.run]
					r.comps.Owed++
					m.runs[o.run] = r
				}
			},
		}
	}
	creating := func(exists func(m *propModel, o propOp) bool, apply func(m *propModel, o propOp, now time.Time)) rule {
		return rule{
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				if r.status.Terminal() || exists(m, o) {
					return refused(world.ErrConflict)
				}
				if d, ok := o.data.(*world.HookCreated); ok {
					for _, h := range m.hooks {
						if h.token == d.Token {
							return outcome{conflict: true}
						}
					}
				}
				return outcome{}
			},
			apply: apply,
		}
	}
	activeHook := func(m *propModel, o propOp) bool { h, ok := m.hooks[o.corr]; return ok && h.run == o.run }
	none := func(*propModel, propOp, time.Time) {}
	rules := map[world.EventType]rule{
		world.EventRunCreated: {noRun: true,
			judge: func(m *propModel, o propOp, _ mRun, _ time.Time) outcome {
				_, exists := m.runs[o.run]
				if k := o.data.(*world.RunCreated).IdempotencyKey; exists || (k != "" && m.idem[k]) {
					return refused(world.ErrConflict)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				m.runs[o.run] = mRun{status: world.RunStatusPending, seq: 1}
				if k := o.data.(*world.RunCreated).IdempotencyKey; k != "" {
					m.idem[k] = true
				}
			}},
		world.EventRunStarted: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				switch r.status {
				case world.RunStatusRunning:
					return outcome{skip: true}
				case world.RunStatusPending, world.RunStatusHeld: // a held run goes on
					return outcome{}
				}
				return refused(world.ErrGone)
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				r := m.runs[o.run]
				r.status = world.RunStatusRunning
				m.runs[o.run] = r
			}},
		world.EventRunCompleted: func() rule {
			rl := ending(world.RunStatusCompleted)
			end := rl.apply
			rl.apply = func(m *propModel, o propOp, now time.Time) {
				end(m, o, now)
				if o.data.(*world.RunCompleted).Cleanup {
					r := m.runs[o.run]
					r.cleanup = world.CleanupPending
					m.runs[o.run] = r
				}
			}
			return rl
		}(),
		world.EventRunDeactivated: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				if !r.status.Terminal() || r.deactivated || r.cleanup == world.CleanupPending ||
					r.comps.Running > 0 || r.compensate && r.comps.Owed > 0 {
					return refused(world.ErrConflict)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				r := m.runs[o.run]
				r.deactivated = true
				m.runs[o.run] = r
			}},
		world.EventRunCleanedUp: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				if r.cleanup != world.CleanupPending {
					return refused(world.ErrConflict)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				r := m.runs[o.run]
				r.cleanup = world.CleanupDone
				if o.data.(*world.RunCleanedUp).Error != nil {
					r.cleanup = world.CleanupFailed
				}
				m.runs[o.run] = r
			}},
		world.EventRunFailed:    ending(world.RunStatusFailed),
		world.EventRunCancelled: ending(world.RunStatusCancelled),
		world.EventRunHeld: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				if r.status.Terminal() {
					return refused(world.ErrGone)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				r := m.runs[o.run]
				r.status = world.RunStatusHeld
				m.runs[o.run] = r
			}},
		world.EventStepCreated: creating(func(m *propModel, o propOp) bool { _, ok := m.steps[key(o.run, o.corr)]; return ok },
			func(m *propModel, o propOp, _ time.Time) {
				st := mStep{status: world.StepStatusPending}
				if o.data.(*world.StepCreated).Compensation != "" {
					st.comp.declared = true
				}
				m.steps[key(o.run, o.corr)] = st
			}),
		world.EventStepStarted: {
			judge: func(m *propModel, o propOp, r mRun, now time.Time) outcome {
				st, ok := m.steps[key(o.run, o.corr)]
				switch {
				case !ok:
					return refused(world.ErrNotFound)
				case st.status.Terminal():
					return refused(world.ErrConflict)
				case r.status.Terminal():
					return refused(world.ErrGone)
				case st.retryAfter.After(now):
					return refused(world.ErrTooEarly)
				case st.status == world.StepStatusRunning && st.leaseUntil.After(now):
					return refused(world.ErrConflict) // another executor's lease
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, now time.Time) {
				ttl := o.data.(*world.StepStarted).LeaseTTL
				if ttl == 0 {
					ttl = world.DefaultStepLease
				}
				st := m.steps[key(o.run, o.corr)]
				if st.status == world.StepStatusRunning {
					st.interrupted++ // its lease expired with no outcome
				}
				st.status, st.attempt, st.leaseUntil, st.retryAfter = world.StepStatusRunning, st.attempt+1, now.Add(ttl), time.Time{}
				m.steps[key(o.run, o.corr)] = st
			}},
		world.EventStepCompleted: stepEnding(world.StepStatusCompleted),
		world.EventStepFailed:    stepEnding(world.StepStatusFailed),
		world.EventStepRetrying: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				st, ok := m.steps[key(o.run, o.corr)]
				switch {
				case !ok:
					return refused(world.ErrNotFound)
				case st.status.Terminal():
					return refused(world.ErrConflict)
				case r.status.Terminal():
					return refused(world.ErrGone)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				st := m.steps[key(o.run, o.corr)]
				st.status, st.retryAfter, st.leaseUntil = world.StepStatusPending, o.data.(*world.StepRetrying).RetryAfter, time.Time{}
				m.steps[key(o.run, o.corr)] = st
			}},
		world.EventHookCreated: creating(activeHook, func(m *propModel, o propOp, _ time.Time) {
			m.hooks[o.corr] = mHook{run: o.run, token: o.data.(*world.HookCreated).Token}
		}),
		world.EventHookConflict: {
			judge: func(*propModel, propOp, mRun, time.Time) outcome { return refused(world.ErrInvalid) }, apply: none},
		world.EventHookReceived: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				switch {
				case !activeHook(m, o):
					return refused(world.ErrNotFound)
				case r.status.Terminal():
					return refused(world.ErrGone)
				}
				return outcome{}
			},
			apply: none},
		world.EventHookDisposed: {
			judge: func(m *propModel, o propOp, _ mRun, _ time.Time) outcome {
				if !activeHook(m, o) {
					return refused(world.ErrNotFound)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) { delete(m.hooks, o.corr) }},
		world.EventWaitCreated: creating(func(m *propModel, o propOp) bool { _, ok := m.waits[key(o.run, o.corr)]; return ok },
			func(m *propModel, o propOp, _ time.Time) { m.waits[key(o.run, o.corr)] = false }),
		world.EventWaitCompleted: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				done, ok := m.waits[key(o.run, o.corr)]
				switch {
				case !ok:
					return refused(world.ErrNotFound)
				case done:
					return refused(world.ErrConflict)
				case r.status.Terminal():
					return refused(world.ErrGone)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) { m.waits[key(o.run, o.corr)] = true }},
		// attribute_set: any status; more than MaxAttributes keys after
		// the merge is invalid.
		world.EventAttributeSet: {
			judge: func(m *propModel, o propOp, r mRun, _ time.Time) outcome {
				if bits.OnesCount32(r.attrs|attrBits(o.data.(*world.AttributeSet).Attributes)) > world.MaxAttributes {
					return refused(world.ErrInvalid)
				}
				return outcome{}
			},
			apply: func(m *propModel, o propOp, _ time.Time) {
				r := m.runs[o.run]
				r.attrs |= attrBits(o.data.(*world.AttributeSet).Attributes)
				m.runs[o.run] = r
			}},
	}
	maps.Copy(rules, compRules())
	return rules
}

// attrBits is the set of propAttrKey keys of attrs.
func attrBits(attrs map[string]string) uint32 {
	var b uint32
	for i := range propAttrKeys {
		if _, ok := attrs[propAttrKey(i)]; ok {
			b |= 1 << i
		}
	}
	return b
}
