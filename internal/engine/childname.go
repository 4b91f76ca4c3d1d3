package engine

import (
	"encoding/json"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// Naming child runs in divergence messages. The hook on which a parent
// receives a child run's outcome has an internal token that means nothing
// to a reader; the step that starts the child (StartChildStep, created
// right after the hook) records the child's workflow and that token in
// its input. A divergence that involves such a hook names the child's
// workflow, so that "the log has a child run of workflow X where the code
// asks for hook Y" says which call changed.

// childStartInput is the part of StartChildStep's input the engine reads:
// the child's workflow and the token of the parent's hook it resumes.
type childStartInput struct {
	Workflow    string `json:"workflow"`
	NotifyToken string `json:"notifyToken"`
}

// noteChild remembers, for a step_created of StartChildStep, which
// workflow the hook with its notify token waits for.
func (r *replayer) noteChild(ev *world.Event) {
	d, ok := ev.Data.(*world.StepCreated)
	if !ok || d.StepName != StartChildStep {
		return
	}
	var in childStartInput
	if json.Unmarshal(d.Input, &in) != nil || in.NotifyToken == "" {
		return
	}
	if r.childFlows == nil {
		r.childFlows = map[string]string{}
	}
	r.childFlows[in.NotifyToken] = in.Workflow
}

// describeLogged is describeEvent, naming the child workflow of a child
// run's hook.
func (r *replayer) describeLogged(ev *world.Event) string {
	if d, ok := ev.Data.(*world.HookCreated); ok {
		if wf, ok := r.childFlows[d.Token]; ok {
			return fmt.Sprintf("hook_created for the outcome of a child run of workflow %q: internal token %q (%s)", wf, d.Token, ev.CorrelationID)
		}
	}
	return describeEvent(ev)
}

// describeAsked is describeOp, naming the child workflow of a hook the
// code asks for to receive a child run's outcome.
func (r *replayer) describeAsked(o *op) string {
	if o.kind == opHook && o.index+1 < len(r.ops) {
		next := r.ops[o.index+1]
		var in childStartInput
		if next.kind == opStep && next.name == StartChildStep && json.Unmarshal(next.input, &in) == nil && in.NotifyToken == o.name {
			return fmt.Sprintf("the outcome of a child run of workflow %q: hook with internal token %q (%s)", in.Workflow, o.name, o.id)
		}
	}
	return describeOp(o)
}
