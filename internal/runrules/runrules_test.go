package runrules

import (
	"context"
	"reflect"
	"slices"
	"strconv"
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

// paged is a Storage (by embedding) whose ListEvents serves n events in
// pages of at most two, whatever limit it is asked for.
type paged struct {
	world.Storage
	n     int64
	limit []int
}

func (s *paged) ListEvents(_ context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	s.limit = append(s.limit, p.Pagination.Limit)
	from := int64(0)
	if p.Pagination.Cursor != "" {
		from, _ = strconv.ParseInt(p.Pagination.Cursor, 10, 64)
	}
	page := &world.Page[world.Event]{}
	for seq := from + 1; seq <= min(from+2, s.n); seq++ {
		page.Items = append(page.Items, world.Event{RunID: p.RunID, Seq: seq})
	}
	if from+2 < s.n {
		page.HasMore, page.Cursor = true, strconv.FormatInt(from+2, 10)
	}
	return page, nil
}

func TestAllEventsFollowsPages(t *testing.T) {
	t.Parallel()
	s := &paged{n: 5}
	evs, err := AllEvents(t.Context(), s, "wrun_x")
	if err != nil || len(evs) != 5 {
		t.Fatalf("AllEvents = %d events, %v; want 5", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if len(s.limit) != 3 || s.limit[0] != world.MaxPageLimit {
		t.Fatalf("pages asked with limits %v, want 3 of %d", s.limit, world.MaxPageLimit)
	}
}

func TestMessageSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m    world.Message
		want []string
	}{
		{world.Message{RunID: "wrun_01J00000000000000000000000"}, nil},
		{world.Message{RunID: "wrun_01J00000000000000000000000", StepID: "step_01J00000000000000000000000"}, []string{"step_01J00000000000000000000000"}},
		{world.Message{RunID: "wrun_01J00000000000000000000000", StepIDs: []string{"step_01J00000000000000000000000"}}, []string{"step_01J00000000000000000000000"}},
		{world.Message{RunID: "wrun_01J00000000000000000000000", StepID: "step_01J00000000000000000000000", StepIDs: []string{"step_01J00000000000000000000000"}}, []string{"step_01J00000000000000000000000", "step_01J00000000000000000000000"}},
	} {
		if got := Steps(c.m); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Steps(%+v) = %v, want %v", c.m, got, c.want)
		}
	}
}
