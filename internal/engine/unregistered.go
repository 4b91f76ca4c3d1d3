package engine

import (
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// A step the code calls that the deployment's Registry does not hold is a
// deploy mistake like a divergence, not a failure of the run: the run is
// held (holdRun) with world.CodeDeploymentMismatch before the step is
// created or started, and the hold's retries replay it with the code
// deployed then, releasing it once the step is registered. A background
// executor that finds such a step queued wakes its run to the same end
// (executeStep) instead of failing the step.

// stepHeldFmt is the message of a hold for a step that is not registered.
const stepHeldFmt = "step %q is not registered with this deployment's Registry, and the workflow %q calls it: " +
	"the run is held until code that registers the step is deployed"

// held reports whether the replay stopped on a deploy mistake that holds
// the run: a divergence, or a step that is not registered.
func (r *replayer) held() bool {
	return r.finished && (r.failCode == world.CodeReplayDivergence || r.failCode == world.CodeDeploymentMismatch)
}

// missingStep returns a step the session is about to create or start whose
// name the Registry does not hold: the first the code asked for that the
// log has not created, or one due to start again. Nil when there is none.
func (s *session) missingStep(now time.Time) *op {
	if s.r.finished {
		return nil
	}
	for _, o := range s.r.ops[s.r.matched:] {
		if o.kind == opStep && !s.e.registered(o.name) {
			return o
		}
	}
	if s.registeredOpen == (openCheck{s.r, s.r.matched}) {
		return nil
	}
	for _, o := range s.schedule(now).runnable() {
		if !s.e.registered(o.name) {
			return o
		}
	}
	for _, o := range s.r.openSteps {
		if !s.e.registered(o.name) {
			return nil // not runnable yet: looked at again next turn
		}
	}
	// The open steps only grow as the replay matches creations: until it
	// matches more, none of them needs looking at again (a wide fan-out's
	// thousands, at every turn).
	s.registeredOpen = openCheck{s.r, s.r.matched}
	return nil
}

// openCheck names a replay and how many operations it had matched when
// missingStep found every open step registered.
type openCheck struct {
	r       *replayer
	matched int
}

// registered reports whether the Registry holds the step named name.
func (pt *port) registered(name string) bool {
	_, ok := pt.reg.Step(name)
	return ok
}

// holdMissing stops the replay to hold the run: step o is not registered.
func (r *replayer) holdMissing(o *op) {
	r.stop()
	r.finished = true
	r.output = nil
	r.failCode = world.CodeDeploymentMismatch
	r.failure = &world.ErrorData{Type: TypeStepNotRegistered, Message: fmt.Sprintf(stepHeldFmt, o.name, r.meta.workflowName)}
}
