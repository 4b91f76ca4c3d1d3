package runrules

import (
	"slices"
	"testing"

	"github.com/skeinflow/skein/world"
)

// The digest is the one recorded logs hold: changing it would make every
// replayed step_created diverge (world/worldtest and world's tests use
// these values as literals).
func TestDigestInput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`null`: "74234e98afe7498f", `{"amount":5}`: "7e84cbf0f7a7c92c"} {
		if got := DigestInput([]byte(in)); got != want {
			t.Errorf("DigestInput(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPatches(t *testing.T) {
	t.Parallel()
	p := []string{"a", "b"}
	for _, d := range []world.EventData{&world.StepCreated{Patches: p}, &world.HookCreated{Patches: p}, &world.HookConflict{Patches: p}, &world.WaitCreated{Patches: p}, &world.AttributeSet{Patches: p}} {
		ev := &world.Event{Data: d}
		if got := Patches(ev); !slices.Equal(got, p) || !HasPatch(ev, "b") || HasPatch(ev, "c") {
			t.Errorf("%T: Patches = %q, HasPatch(b) = %v, HasPatch(c) = %v", d, got, HasPatch(ev, "b"), HasPatch(ev, "c"))
		}
	}
	if ev := (&world.Event{Data: &world.StepCompleted{}}); Patches(ev) != nil || HasPatch(ev, "a") {
		t.Errorf("step_completed carries patches %q", Patches(ev))
	}
}

// limited is a World (by embedding) that reports its own limits.
type limited struct {
	world.World
	l world.Limits
}

func (w limited) Limits() world.Limits { return w.l }

func TestLimitsOf(t *testing.T) {
	t.Parallel()
	if got, want := LimitsOf(limited{}), (world.Limits{}).WithDefaults(); got != want {
		t.Errorf("LimitsOf of a World with zero limits = %+v, want the defaults %+v", got, want)
	}
	got := LimitsOf(limited{l: world.Limits{MaxEvents: 7}})
	if got.MaxEvents != 7 || got.MaxPayload != (world.Limits{}).WithDefaults().MaxPayload {
		t.Errorf("LimitsOf = %+v, want MaxEvents 7 and the other defaults", got)
	}
	var plain struct{ world.World }
	if got, want := LimitsOf(plain), (world.Limits{}).WithDefaults(); got != want {
		t.Errorf("LimitsOf of a World without Limits = %+v, want the defaults", got)
	}
}
