package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skeinflow/skein/world"
)

// Run attributes set by workflow code. Context.SetAttributes records an
// operation like a step's, without a future: its attribute_set (with the
// operation's correlation ID) is committed at the workflow's next
// suspension, or before the run's end when the code returns first. Replay
// matches it at its position by the keys it sets; code that sets other
// keys there diverges.
//
// The bound on a run's attributes is checked when the code asks, against
// every key the run's log holds (all of it, client-set keys recorded after
// this point included) and the keys the code asked for so far. Keys are
// never removed, and a recorded attribute_set's keys are in the log, so a
// call that was recorded is accepted again on every replay; a call that
// was refused is refused again. A client that fills the run between the
// call and its commit makes the commit's fence fail: the session reloads
// the log and the code is refused.

// attrName is the name an attribute operation is matched by: its sorted
// keys.
func attrName(attrs map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(attrs)), ",")
}

// noteAttributes remembers the attribute keys an event of the log sets.
func (r *replayer) noteAttributes(ev *world.Event) {
	var attrs map[string]string
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		attrs = d.Attributes
	case *world.AttributeSet:
		attrs = d.Attributes
	default:
		return
	}
	if r.attrKeys == nil {
		r.attrKeys = make(map[string]bool)
	}
	for k := range attrs {
		r.attrKeys[k] = true
	}
}

// SetAttributes asks for attrs to be merged into the run's attributes (see
// the top of this file). It returns a *world.RefusalError matching
// world.ErrInvalid, and records nothing, when a key or value is invalid or
// the run would hold more than world.MaxAttributes keys. An empty attrs
// records nothing.
func (c *Context) SetAttributes(attrs map[string]string) error {
	r := c.r
	r.enter("workflow.SetAttributes")
	if len(attrs) == 0 {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return &world.RefusalError{Kind: world.ErrInvalid, EventType: world.EventAttributeSet, Entity: r.meta.runID,
			Reason: fmt.Sprintf(format, args...)}
	}
	if err := world.CheckAttributes(attrs); err != nil {
		return refuse("%v", err)
	}
	n := len(r.attrKeys)
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if r.attrKeys[k] {
			continue
		}
		if n == world.MaxAttributes {
			return refuse("attribute %q would be attribute %d of the run, at most %d", k, n+1, world.MaxAttributes)
		}
		n++
	}
	o := r.newOp(opAttr, world.PrefixAttribute, attrName(attrs))
	o.attrs = maps.Clone(attrs)
	if r.attrKeys == nil {
		r.attrKeys = make(map[string]bool)
	}
	for k := range attrs {
		r.attrKeys[k] = true
	}
	return nil
}

// matchFinal pairs an attribute_set with the operation of its correlation
// ID after the workflow returned: the code's last attributes are committed
// with the run's end, after the steps it asked for and left are dropped.
func (r *replayer) matchFinal(ev *world.Event, d *world.AttributeSet) bool {
	o := r.byID[ev.CorrelationID]
	if o == nil || o.kind != opAttr || o.created || o.name != attrName(d.Attributes) {
		return false
	}
	o.created = true
	return true
}

// finalAttributes lists the attribute operations the code asked for and
// that are not recorded yet, to commit before the run's end.
func (r *replayer) finalAttributes() []*op {
	var out []*op
	if r.divergence != nil {
		return nil
	}
	for _, o := range r.ops[r.matched:] {
		if o.kind == opAttr && !o.created {
			out = append(out, o)
		}
	}
	return out
}

// attributeEvent is the attribute_set that records o.
func attributeEvent(o *op) *world.AttributeSet {
	return &world.AttributeSet{Attributes: o.attrs, Patches: o.patches}
}
