package dynamoworld

import (
	"maps"
	"time"

	"github.com/skeinflow/skein/world"
)

// planSteps decides the step items a commit writes: one write a changed
// step, but none for a step the commit creates and leaves running when its
// absence is proven without a condition on its item (a lazy step, lazy.go):
// the commit item lists it instead; and none for a lazy step the commit
// ends in a run whose head allows it, unless the commit also took it over
// (it is then bare, bare.go). Any other change of a lazy or bare step
// writes its first item, a put on its absence; one that takes a lazy step
// over (step_started on it, running) also checks that its lease record
// still holds the lease it judged. A step that has an item is updated, on
// its unrenewed lease for a step_started on a running step.
func planSteps(pl *plan, lazySteps bool) (puts []*op, diffs []*diffPair, err error) {
	pl.lazy = maps.Clone(pl.snap.lazy)
	if pl.lazy == nil {
		pl.lazy = map[string]int64{}
	}
	pl.bare = maps.Clone(pl.snap.bare)
	if pl.bare == nil {
		pl.bare = map[string]struct{}{}
	}
	for _, id := range sortedIDs(pl.steps) {
		c := pl.steps[id]
		_, wasLazy := pl.snap.lazy[id]
		_, wasBare := pl.snap.bare[id]
		switch {
		case c.final != nil && c.init == nil:
			if lazySteps && !c.assumed && c.final.Status == world.StepStatusRunning && len(pl.lazy) < maxLazySteps {
				pl.lazy[id] = pl.prev
				continue
			}
			enc, err := encodeStep(c.final, pl.ttl)
			if err != nil {
				return nil, nil, err
			}
			puts = append(puts, putOp(enc, tagOther, "", notExists))
		case c.final != nil && c.changed() && wasLazy && endsBare(c.final) && pl.snap.mayBare && !c.leaseGuard:
			delete(pl.lazy, id)
			pl.bare[id] = struct{}{}
			pl.madeBare = append(pl.madeBare, id)
		case c.final != nil && c.changed() && (wasLazy || wasBare):
			enc, err := encodeStep(c.final, pl.ttl)
			if err != nil {
				return nil, nil, err
			}
			puts = append(puts, putOp(enc, tagOther, "", notExists))
			if wasLazy && c.leaseGuard {
				puts = append(puts, checkOp(leaseRecordKey(pl.runID, id), tagOther, "", leaseRecordCond(c.initLease)))
			}
			delete(pl.lazy, id)
			delete(pl.bare, id)
		case c.final != nil && c.changed():
			d, err := stepDiff(c, pl.ttl)
			if err != nil {
				return nil, nil, err
			}
			diffs = append(diffs, d)
		}
	}
	return puts, diffs, nil
}

// stepDiff is the update of a step that has an item; step_started on a
// running step conditions it on the lease it judged.
func stepDiff(c *change[world.Step], ttl int64) (*diffPair, error) {
	base, err := encodeStep(c.init, 0)
	if err != nil {
		return nil, err
	}
	final, err := encodeStep(c.final, ttl)
	if err != nil {
		return nil, err
	}
	d := &diffPair{base: base, final: final}
	switch {
	case c.leaseGuard:
		d.cond = leaseCond(aLeaseExp, c.initLease)
	case c.compGuard:
		d.cond = leaseCond(aCompLeaseExp, c.initCompLease)
	}
	return d, nil
}

// leaseCond conditions a step's write on its lease attribute attr being
// still lease (absent when zero): a renewal writes no event.
func leaseCond(attr string, lease time.Time) func(e *expr) string {
	return func(e *expr) string {
		if lease.IsZero() {
			return "attribute_not_exists(" + e.n(attr) + ")"
		}
		return e.n(attr) + " = " + e.v(num(lease.UnixNano()))
	}
}
