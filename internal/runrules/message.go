package runrules

import "github.com/skeinflow/skein/world"

// Steps returns the steps a queue message asks to execute: StepID (when
// set) followed by StepIDs. None for a plain continuation.
func Steps(m world.Message) []string {
	if m.StepID == "" {
		return m.StepIDs
	}
	return append([]string{m.StepID}, m.StepIDs...)
}
