package engine

import (
	"fmt"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// Patches: a change to workflow code guarded by a patch ID takes the new
// path in runs that reach it for the first time and the old path in runs
// whose log already went past it with the old code.
//
// The decision is the log's, so replay is exact. Creation events (steps,
// hooks, waits) are committed in the order the code asks for operations, so
// the code's next operation index names a position in the log. When the
// code asks whether a patch applies:
//   - a creation event of the log carries the patch's marker: the run took
//     the new path (the marker was recorded the first time);
//   - otherwise, the log holds a creation at or past the code's next
//     operation: the run went past the patch with code that did not know
//     it, and takes the old path;
//   - otherwise the run has not reached this point yet: it takes the new
//     path, and the marker is recorded on the next creation event the code
//     causes (in the same append, so no log has one without the other).
//
// A patch ID is decided once per run: later calls with the same ID, from
// the same place in the code (a loop), return the first answer.

// notePatches counts a creation event of the log and remembers the patch
// markers it carries. It sees the whole log before replay starts (rebuild
// notes every event before consuming any), so that the code can look ahead.
func (r *replayer) notePatches(ev *world.Event) {
	switch ev.Data.(type) {
	case *world.StepCreated, *world.HookCreated, *world.HookConflict, *world.WaitCreated:
	case *world.AttributeSet:
		if ev.CorrelationID == "" {
			return // a client's: not the code's operation
		}
	default:
		return
	}
	r.creations++
	for _, id := range runrules.Patches(ev) {
		if r.marked == nil {
			r.marked = make(map[string]bool)
		}
		r.marked[id] = true
	}
}

// Patched reports whether the run takes the new path of the patch id (see
// above). site names the place in the code that asks (file:line): a patch
// ID asked for at two places is a mistake that would tie two changes'
// decisions together, and panics with both places named.
func (c *Context) Patched(id, site string) bool {
	r := c.r
	r.enter("workflow.Patched")
	if v, ok := r.patched[id]; ok {
		if first := r.patchSites[id]; first != site {
			panic(fmt.Sprintf("workflow.Patched: patch ID %q is used at %s and at %s; give each change its own ID", id, first, site))
		}
		return v
	}
	v := true
	switch {
	case r.marked[id]:
	case r.creations > len(r.ops):
		v = false
	default:
		r.pendingPatches = append(r.pendingPatches, id)
	}
	if r.patched == nil {
		r.patched, r.patchSites = make(map[string]bool), make(map[string]string)
	}
	r.patched[id], r.patchSites[id] = v, site
	return v
}

// takePatches hands the markers waiting for the next creation to it.
func (r *replayer) takePatches(o *op) {
	if len(r.pendingPatches) > 0 {
		o.patches, r.pendingPatches = r.pendingPatches, nil
	}
}
