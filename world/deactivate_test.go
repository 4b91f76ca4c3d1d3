package world_test

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func deactivated(status world.RunStatus) *world.Run {
	r := mkRun(status)
	r.DeactivatedAt = created
	return r
}

func withCleanup(r *world.Run, c string) *world.Run { r.Cleanup = c; return r }

func wantRun(check func(*world.Run) bool, what string) func(*testing.T, world.Effect, error) {
	return func(t *testing.T, eff world.Effect, _ error) {
		if eff.Run == nil || !check(eff.Run) {
			t.Fatalf("effect run %+v: want %s", eff.Run, what)
		}
	}
}

func TestApplyRest(t *testing.T) {
	t.Parallel()
	var cases []applyCase
	for _, st := range terminalRuns {
		cases = append(cases,
			applyCase{name: "deactivate " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunDeactivated{},
				check: wantRun(func(r *world.Run) bool { return r.DeactivatedAt.Equal(now) && r.Status == st }, "deactivated now, status kept")},
			applyCase{name: "deactivate twice " + string(st), state: world.State{Run: deactivated(st)}, data: &world.RunDeactivated{},
				want: world.ErrConflict, check: wantRefusal(world.ErrConflict)},
			applyCase{name: "running step completes after " + string(st), state: world.State{Run: mkRun(st), Step: mkStep(world.StepStatusRunning, 1)},
				corr: stepID, data: &world.StepCompleted{}},
			applyCase{name: "running step retries after " + string(st), state: world.State{Run: mkRun(st), Step: mkStep(world.StepStatusRunning, 1)},
				corr: stepID, data: &world.StepRetrying{Error: &world.ErrorData{Message: "x"}}, want: world.ErrGone},
			applyCase{name: "cleanup without hook " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunCleanedUp{}, want: world.ErrConflict},
		)
	}
	for _, st := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld} {
		cases = append(cases, applyCase{name: "deactivate " + string(st), state: world.State{Run: mkRun(st)}, data: &world.RunDeactivated{},
			want: world.ErrConflict, check: wantRefusal(world.ErrConflict)})
	}
	pending := func() *world.Run { return withCleanup(mkRun(world.RunStatusCompleted), world.CleanupPending) }
	cases = append(cases,
		applyCase{name: "completed asks for cleanup", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: &world.RunCompleted{Cleanup: true},
			check: wantRun(func(r *world.Run) bool { return r.Cleanup == world.CleanupPending }, "cleanup pending")},
		applyCase{name: "completed without cleanup", state: world.State{Run: mkRun(world.RunStatusRunning)}, data: &world.RunCompleted{},
			check: wantRun(func(r *world.Run) bool { return r.Cleanup == "" }, "no cleanup")},
		applyCase{name: "deactivate with cleanup pending", state: world.State{Run: pending()}, data: &world.RunDeactivated{}, want: world.ErrConflict},
		applyCase{name: "cleanup done", state: world.State{Run: pending()}, data: &world.RunCleanedUp{},
			check: wantRun(func(r *world.Run) bool { return r.Cleanup == world.CleanupDone && r.Status == world.RunStatusCompleted }, "cleanup done")},
		applyCase{name: "cleanup failed", state: world.State{Run: pending()}, data: &world.RunCleanedUp{Error: &world.ErrorData{Message: "boom"}},
			check: wantRun(func(r *world.Run) bool {
				return r.Cleanup == world.CleanupFailed && r.Status == world.RunStatusCompleted
			}, "cleanup failed, run completed")},
		applyCase{name: "cleanup twice", state: world.State{Run: withCleanup(mkRun(world.RunStatusCompleted), world.CleanupDone)}, data: &world.RunCleanedUp{}, want: world.ErrConflict},
		applyCase{name: "deactivate after cleanup", state: world.State{Run: withCleanup(mkRun(world.RunStatusCompleted), world.CleanupFailed)}, data: &world.RunDeactivated{},
			check: wantRun(func(r *world.Run) bool { return r.Deactivated() }, "deactivated")},
		applyCase{name: "pending step starts after end", state: world.State{Run: mkRun(world.RunStatusCompleted), Step: withRetry(mkStep(world.StepStatusPending, 1), now.Add(-time.Second))},
			corr: stepID, data: &world.StepStarted{}, want: world.ErrGone},
		applyCase{name: "deactivated takes no correlation", state: world.State{Run: mkRun(world.RunStatusCompleted)}, corr: stepID, data: &world.RunDeactivated{}, want: world.ErrInvalid},
	)
	runApplyCases(t, cases)
}

func TestRestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, d := range []world.EventData{&world.RunDeactivated{}, &world.RunCleanedUp{Error: &world.ErrorData{Message: "m"}}, &world.RunCompleted{Cleanup: true}} {
		got, err := world.NewEventData(typeOf(d))
		if err != nil || typeOf(got) != typeOf(d) {
			t.Fatalf("NewEventData(%s) = %v, %v", typeOf(d), got, err)
		}
	}
}
