package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// parcel is a workflow deployed in versions: v1 reserves, sleeps and
// ships. A version's change is applied with or without patches.
type parcel struct {
	steps map[string]*sdk.Step[string, string]
	sleep time.Duration
}

func newParcel(sleep time.Duration) *parcel {
	s := &parcel{steps: map[string]*sdk.Step[string, string]{}, sleep: sleep}
	for _, name := range []string{"fraud-check", "reserve", "gift-wrap", "ship"} {
		s.steps[name] = sdk.NewStep(name, func(_ context.Context, in string) (string, error) { return name + ":" + in, nil })
	}
	return s
}

// version builds the workflow from a plan: the names of the steps to call
// before and after the sleep, each possibly guarded by a patch (see
// planned).
func (s *parcel) version(before, after []string, patched bool) *sdk.Workflow[string, []string] {
	return sdk.New("shipping", func(ctx sdk.Context, in string) ([]string, error) {
		var trail []string
		do := func(name string) error {
			out, err := s.steps[strings.TrimLeft(name, "+-")].Call(ctx, in)
			trail = append(trail, out)
			return err
		}
		for _, name := range before {
			if planned(ctx, name, patched) {
				if err := do(name); err != nil {
					return nil, err
				}
			}
		}
		if err := sdk.Sleep(ctx, s.sleep); err != nil {
			return nil, err
		}
		for _, name := range after {
			if planned(ctx, name, patched) {
				if err := do(name); err != nil {
					return nil, err
				}
			}
		}
		return trail, nil
	})
}

// planned decides whether to call a step of v2: "+x" is a step v2 adds,
// "-x" one it removes, any other name a step both versions call. With
// patched, additions and removals go through workflow.Patched; without,
// v2 simply calls what it calls.
func planned(ctx sdk.Context, name string, patched bool) bool {
	switch {
	case strings.HasPrefix(name, "+"):
		return !patched || sdk.Patched(ctx, "add-"+name[1:])
	case strings.HasPrefix(name, "-"):
		return patched && !sdk.Patched(ctx, "remove-"+name[1:])
	}
	return true
}

func (s *parcel) registry(wf *sdk.Workflow[string, []string]) *sdk.Registry {
	reg := sdk.NewRegistry().MustRegister(wf)
	for _, st := range s.steps {
		reg.MustRegister(st)
	}
	return reg
}

// TestPatchOldRunsKeepTheirPath deploys v1 (reserve, sleep, ship), starts a
// run that suspends at its sleep, then deploys v2, which adds a fraud check
// before the reserve (a point the run went past), removes the ship and
// adds a gift wrap after the sleep (points the run has not reached). With
// patches the old run completes, without a hold, with the old path before
// the sleep and the new one after it; a new run takes the new path
// throughout; CheckPatch tells the fraud check's patch is retirable only
// once the old run ended. Without patches the same change holds the run.
func TestPatchOldRunsKeepTheirPath(t *testing.T) {
	t.Parallel()
	for _, patched := range []bool{true, false} {
		name := map[bool]string{true: "patched", false: "unguarded"}[patched]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The runs sleep an hour on a clock the test moves once the
			// old run's sleep must be over, not before.
			base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			clock := &testClock{t: base}
			lw, err := localworld.Open(localworld.Config{}, knobs.WithNow(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := newParcel(time.Hour)
			v1 := s.version([]string{"reserve"}, []string{"ship"}, false)
			v2Before, v2After := []string{"+fraud-check", "reserve"}, []string{"-ship", "+gift-wrap"}
			v2 := s.version(v2Before, v2After, patched)
			client, _ := sdk.NewClient(sdk.ClientConfig{World: lw}, knobs.WithNow(clock.Now))
			e := &env{t: t, lw: lw}
			deploy := func(t *testing.T, ctx context.Context, lw *localworld.World, reg *sdk.Registry) (stop func()) {
				return deployOn(t, ctx, sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithNow(clock.Now), knobs.WithPollWait(20*time.Millisecond))
			}

			stop := deploy(t, ctx, lw, s.registry(v1))
			old, err := v1.Start(ctx, client, "old")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "v1 asleep", func() bool { return countEvents(e.events(old.ID()), world.EventWaitCreated) == 1 })
			stop()
			stop = deploy(t, ctx, lw, s.registry(v2))
			defer stop()
			if !patched {
				clock.Set(base.Add(2 * time.Hour)) // the sleep is over: v2 replays the run
				waitFor(t, "the run held", func() bool {
					st, err := statusOfID(ctx, client, old.ID())
					return err == nil && st == world.RunStatusHeld
				})
				return
			}
			fresh, err := v2.Start(ctx, client, "new")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "v2 asleep", func() bool { return countEvents(e.events(fresh.ID()), world.EventWaitCreated) == 1 })
			rep, err := client.CheckPatch(ctx, &sdk.CheckPatchParams{WorkflowName: "shipping", PatchID: "add-fraud-check"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Retirable() || !slices.Contains(rep.Open, old.ID()) || !slices.Equal(rep.Marked, []string{fresh.ID()}) {
				t.Fatalf("while the old run sleeps: %+v, want it open and the new one marked", rep)
			}

			clock.Set(base.Add(2 * time.Hour)) // both sleeps are over
			waitFor(t, "the old run to end or be held", func() bool {
				info, err := client.GetRun(ctx, old.ID())
				if err == nil && info.Status == world.RunStatusHeld {
					t.Fatalf("the old run is held: %v", info.Hold.Err)
				}
				return err == nil && info.Status.Terminal()
			})
			got, err := old.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"reserve:old", "gift-wrap:old"}; !slices.Equal(got, want) {
				t.Errorf("old run %q, want %q", got, want)
			}
			got, err = fresh.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"fraud-check:new", "reserve:new", "gift-wrap:new"}; !slices.Equal(got, want) {
				t.Errorf("new run %q, want %q", got, want)
			}
			for _, id := range []string{old.ID(), fresh.ID()} {
				if n := countEvents(e.events(id), world.EventRunHeld); n != 0 {
					t.Errorf("run %s was held %d times", id, n)
				}
			}
			rep, err = client.CheckPatch(ctx, &sdk.CheckPatchParams{WorkflowName: "shipping", PatchID: "add-fraud-check"})
			if err != nil || !rep.Retirable() {
				t.Fatalf("after both ended: %+v, %v; want retirable", rep, err)
			}
		})
	}
}

// TestPatchIDMisuse: a patch ID asked for at two places in the code, or an
// empty one, fails the run with a message naming the mistake; asking again
// from the same place (a loop) is fine.
func TestPatchIDMisuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(ctx sdk.Context) bool
		want string // "" for success
	}{
		{"two places", func(ctx sdk.Context) bool {
			a := sdk.Patched(ctx, "p")
			return a && sdk.Patched(ctx, "p")
		}, `patch ID "p" is used at`},
		{"empty", func(ctx sdk.Context) bool { return sdk.Patched(ctx, "") }, "empty patch ID"},
		{"loop", func(ctx sdk.Context) bool {
			ok := true
			for range 3 {
				ok = ok && sdk.Patched(ctx, "p")
			}
			return ok
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wf := sdk.New("patch-misuse", func(ctx sdk.Context, _ struct{}) (bool, error) { return tc.fn(ctx), nil })
			e := newEnv(t, wf)
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if tc.want == "" {
				if err != nil || !got {
					t.Fatalf("result %v, %v; want true", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("result %v, %v; want a failure naming %q", got, err, tc.want)
			}
			if tc.name == "two places" && strings.Count(err.Error(), "patch_test.go:") != 2 {
				t.Errorf("%v does not name both places", err)
			}
		})
	}
}
