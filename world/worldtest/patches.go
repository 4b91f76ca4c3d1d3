package worldtest

import (
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// Patch markers ride creation events (see world/patch.go): a World must
// keep them as written, and keep a hook_created's on the hook_conflict it
// writes in its place.
func patchCases() []testCase {
	return []testCase{
		{"markers_kept", testPatchMarkersKept},
		{"marker_kept_on_hook_conflict", testPatchMarkerOnConflict},
		{"invalid_marker_refused", testPatchMarkerInvalid},
	}
}

func testPatchMarkersKept(t *testing.T, f *fixture) {
	run := f.startedRun()
	step, hook, wait := ids.New(world.PrefixStep), ids.New(world.PrefixHook), ids.New(world.PrefixWait)
	f.mustAppend(run,
		ev(step, &world.StepCreated{StepName: "charge", Patches: []string{"add-fraud-check", "v2"}}),
		ev(hook, &world.HookCreated{Token: token(), Patches: []string{"hook-patch"}}),
		ev(wait, &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour), Patches: []string{"wait-patch"}}),
	)
	want := map[string][]string{step: {"add-fraud-check", "v2"}, hook: {"hook-patch"}, wait: {"wait-patch"}}
	found := 0
	for _, e := range f.events(run) {
		w, ok := want[e.CorrelationID]
		if !ok {
			continue
		}
		found++
		if got := patchesOf(&e); !slices.Equal(got, w) {
			t.Fatalf("%s read back with patches %q, want %q", e.Type(), got, w)
		}
	}
	if found != len(want) {
		t.Fatalf("read back %d of the %d creations", found, len(want))
	}
}

func testPatchMarkerOnConflict(t *testing.T, f *fixture) {
	holder, other := f.startedRun(), f.startedRun()
	tok := token()
	f.mustCreateHook(holder, tok)
	id := ids.New(world.PrefixHook)
	r := f.mustAppendOne(other, ev(id, &world.HookCreated{Token: tok, Patches: []string{"p"}}))
	if r.Event == nil || r.Event.Type() != world.EventHookConflict {
		t.Fatalf("hook_created on a held token: got %s, want hook_conflict", eventType(r.Event))
	}
	if got := patchesOf(r.Event); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("hook_conflict result carries patches %q, want [p]", got)
	}
	evs := f.events(other)
	if last := &evs[len(evs)-1]; last.Type() != world.EventHookConflict || !slices.Equal(patchesOf(last), []string{"p"}) {
		t.Fatalf("read back %s %+v, want hook_conflict with the patch", last.Type(), last.Data)
	}
}

func testPatchMarkerInvalid(t *testing.T, f *fixture) {
	run := f.startedRun()
	before := f.events(run)
	for _, bad := range [][]string{{""}, {"a\x00b"}} {
		_, err := f.append(run, ev(ids.New(world.PrefixStep), &world.StepCreated{StepName: "s", Patches: bad}))
		wantErr(t, err, world.ErrInvalid, "step_created with a bad patch ID")
	}
	f.wantLogUnchanged(run, before, "bad patch IDs")
}

// patchesOf returns the patch markers a creation event carries, read from
// its data as a World stores it, or nil for an event of another type.
func patchesOf(ev *world.Event) []string {
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
