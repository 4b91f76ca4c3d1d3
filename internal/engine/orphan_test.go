package engine

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// ChildRunID gives every attempt of one start step the same run, a valid
// run ID with the parent's time, another one for another step or parent,
// and none for something that is no step ID.
func TestChildRunID(t *testing.T) {
	ids := world.NewIDSource(func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }, nil)
	parent, other := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	step, step2 := ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	id := ChildRunID(parent, step)
	if err := world.ValidateID(world.PrefixRun, id); err != nil {
		t.Fatal(err)
	}
	if again := ChildRunID(parent, step); again != id {
		t.Fatalf("ChildRunID gave %s, then %s", id, again)
	}
	if ChildRunID(parent, step2) == id || ChildRunID(other, step) == id {
		t.Fatal("another step or parent gave the same child run ID")
	}
	at, _ := idTime(id)
	if want, _ := idTime(step); !at.Equal(want) {
		t.Fatalf("child run ID time %s, want the step's %s", at, want)
	}
	if got := ChildRunID(parent, "nonsense"); got != "" {
		t.Fatalf("ChildRunID of no step ID = %q, want empty", got)
	}
}
