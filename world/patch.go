package world

// Patch markers. Workflow code that changes under runs already in flight
// guards the change with a patch ID (workflow.Patched): a run that reaches
// the patch for the first time takes the new path and records the ID on the
// next creation event it writes (step_created, hook_created, wait_created,
// an attribute_set the code recorded; a hook_conflict written in place of a
// hook_created keeps the IDs). A run
// whose log went past the patch's position without the marker took the old
// path, and replays it. The marker travels with the creation it precedes,
// in the same append, so no log can hold one without the other.

// MaxPatches bounds the patch IDs one creation event carries.
const MaxPatches = 64

// validPatches checks the patch IDs of a creation event: at most
// MaxPatches, each a non-empty name of at most MaxNameLength bytes.
func validPatches(t EventType, corr string, ids []string) error {
	if len(ids) > MaxPatches {
		return invalidf(t, corr, "more than %d patches", MaxPatches)
	}
	for _, id := range ids {
		if id == "" {
			return invalidf(t, corr, "empty patch ID")
		}
		if len(id) > MaxNameLength {
			return invalidf(t, corr, "patch ID longer than %d bytes", MaxNameLength)
		}
		if err := CheckText(id); err != nil {
			return invalidf(t, corr, "patch ID %q %v", id, err)
		}
	}
	return nil
}
