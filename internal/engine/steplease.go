package engine

import (
	"context"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

// stepLease is a step attempt's execution lease as the World has it now,
// which may differ from the expiry its step_started recorded: renewals
// extend it (RenewStepLease), and a World that knows the holder is gone
// expires it early (localworld does when it opens a store a dead process
// held).
type stepLease struct {
	attempt int
	until   time.Time
}

// readStepLeases reads the current lease of every step that the log shows
// running an attempt another invocation started inline under a lease that
// has not yet expired, and makes the session go by it rather than by the
// log (applyStepLeases). Such an attempt matters only if its invocation
// died (a live one holds the run lease until its inline steps end), and a
// restart's World may have expired the dead process's leases already:
// going by the log would make the run wait out a lease nobody holds. It
// costs one read per such step, on a session's cold start only; queued
// attempts need none (see schedule.next). A step that cannot be read keeps
// the log's expiry, the safe side.
func (in *inflight) readStepLeases(ctx context.Context) {
	now := in.e.now()
	var ops []*op
	for _, o := range in.run.replay().openSteps {
		if o.status == world.StepStatusRunning && !o.queued && o.leaseUntil.After(now) {
			ops = append(ops, o)
		}
	}
	if len(ops) == 0 {
		return
	}
	steps := make([]*world.Step, len(ops))
	var wg sync.WaitGroup
	for i, o := range ops {
		wg.Go(func() {
			st, err := in.e.w.GetStep(ctx, &world.GetStepParams{RunID: in.runID, StepID: o.id})
			if err != nil {
				in.e.log.Warn("engine: read a step's lease", "run", in.runID, "step", o.id, "err", err)
				return
			}
			steps[i] = st
		})
	}
	wg.Wait()
	if in.leases == nil {
		in.leases = make(map[string]stepLease)
	}
	for i, o := range ops {
		// Anything but the attempt the log shows running is news the log
		// will bring: keep to the log until then.
		if st := steps[i]; st != nil && st.Status == world.StepStatusRunning && st.Attempt == o.attempt {
			in.leases[o.id] = stepLease{attempt: st.Attempt, until: st.LeaseExpiresAt}
		}
	}
	in.applyStepLeases()
}

// applyStepLeases sets the lease expiry of the steps whose current lease
// the session has read (readStepLeases) while they still run that attempt;
// a rebuild, which replays the log's expiries, applies them again.
func (in *inflight) applyStepLeases() {
	for id, l := range in.leases {
		o := in.run.replay().byID[id]
		if o == nil || o.settled || o.status != world.StepStatusRunning || o.attempt != l.attempt {
			delete(in.leases, id) // the attempt has ended
			continue
		}
		o.leaseUntil = l.until
		in.run.replay().stepOrder.timer(o)
		in.run.replay().tainted = true
	}
}
