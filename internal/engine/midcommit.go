package engine

import "github.com/skeinflow/skein/world"

// midCommit reports whether ev is one of the events a session commits for
// the operations the code asked for before it last waited, with some of
// those operations still to be matched. The code asked for them all before
// it waited, so it sees what this commit settles (a hook's registration or
// conflict) only once the commit's creations are all matched: woken on a
// hook_conflict before the wait_created that follows it, code that returns
// on the conflict would contradict its own log.
func (r *replayer) midCommit(ev *world.Event) bool {
	if r.matched >= len(r.ops) {
		return false
	}
	switch ev.Data.(type) {
	case *world.StepCreated, *world.StepStarted, *world.HookCreated, *world.HookConflict, *world.HookDisposed,
		*world.WaitCreated, *world.AttributeSet, *world.CompStarted:
		return true
	}
	return false
}
