package runrules

import (
	"slices"

	"github.com/skeinflow/skein/world"
)

// HasPatch reports whether ev is a creation event that carries the patch
// marker id (see world.MaxPatches for what a marker is).
func HasPatch(ev *world.Event, id string) bool {
	return slices.Contains(Patches(ev), id)
}

// Patches returns the patch markers a creation event carries (step_created,
// hook_created, hook_conflict, wait_created, attribute_set), or nil.
func Patches(ev *world.Event) []string {
	switch d := ev.Data.(type) {
	case *world.StepCreated:
		return d.Patches
	case *world.HookCreated:
		return d.Patches
	case *world.HookConflict:
		return d.Patches
	case *world.WaitCreated:
		return d.Patches
	case *world.AttributeSet:
		return d.Patches
	}
	return nil
}
