package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestKnownStepsCountsErrors: what knownSteps keeps stays within its bound
// when the steps carry large errors (a step's error, its compensation's),
// not only large inputs and outputs. (Found in review: errors were not
// counted, so 5,000 failing steps with 32 KB stacks held 160 MB.)
func TestKnownStepsCountsErrors(t *testing.T) {
	ks := newKnownSteps()
	stack := strings.Repeat("s", 1<<20)
	for i := range 40 {
		id := fmt.Sprintf("step_%02d", i)
		st := &world.Step{StepID: id, Status: world.StepStatusFailed, Error: &world.ErrorData{Message: "boom", Stack: stack}}
		if i%2 == 1 {
			st.Status = world.StepStatusCompleted
			st.Error = nil
			st.Compensation = &world.StepCompensation{Step: "undo", Error: &world.ErrorData{Message: "undo failed", Stack: stack}}
		}
		ks.note(fmt.Sprintf("run_%02d", i), &world.AppendResult{Results: []world.EventResult{{Event: &world.Event{Seq: 1}, Step: st}}})
		ks.mu.Lock()
		bytes, runs := ks.bytes, len(ks.runs)
		ks.mu.Unlock()
		if bytes > knownMaxBytes {
			t.Fatalf("after %d steps with 1 MiB errors: %d bytes counted kept, bound %d", i+1, bytes, knownMaxBytes)
		}
		if i >= 8 && runs > knownMaxBytes>>20 {
			t.Fatalf("after %d steps with 1 MiB errors: %d kept, at most %d fit the bound", i+1, runs, knownMaxBytes>>20)
		}
	}
}
