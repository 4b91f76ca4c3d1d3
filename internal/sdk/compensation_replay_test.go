package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestCompensationReplay: a log whose compensations are comp_* events
// replays to the same outcome without running them again; a log written
// when Compensate ran compensations as ordinary steps (of the
// compensation's name, and steps whose step_created names no compensation)
// is a replay divergence at the first compensation step, so a run in
// flight from such code is held, never compensated twice.
func TestCompensationReplay(t *testing.T) {
	t.Parallel()
	mk := func(name string) *sdk.Step[string, string] {
		return sdk.NewStep(name, func(ctx context.Context, in string) (string, error) {
			if name == "rp-c" {
				return "", sdk.Fatal(errors.New("out of stock"))
			}
			return name + "-done", nil
		})
	}
	undo := func(name string) *sdk.Step[sdk.Compensation[string, string], struct{}] {
		return sdk.NewStep(name, func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
			return struct{}{}, nil
		})
	}
	// The old code: undo steps called as ordinary steps.
	undoA, undoB := undo("rp-undo-a"), undo("rp-undo-b")
	oldA, oldB, oldC := mk("rp-a"), mk("rp-b"), mk("rp-c")
	old := sdk.New("rp-saga", func(ctx sdk.Context, in string) (string, error) {
		ra, _ := oldA.Call(ctx, in)
		rb, _ := oldB.Call(ctx, in)
		if _, err := oldC.Call(ctx, in); err != nil {
			_, _ = undoB.Call(ctx, sdk.Compensation[string, string]{Input: in, Result: rb})
			_, _ = undoA.Call(ctx, sdk.Compensation[string, string]{Input: in, Result: ra})
			return "rolled back", nil
		}
		return "done", nil
	})
	// The new code: the same steps declaring their compensations.
	newUndoA, newUndoB := undo("rp-undo-a"), undo("rp-undo-b")
	newA, newB := sdk.WithCompensation(mk("rp-a"), newUndoA), sdk.WithCompensation(mk("rp-b"), newUndoB)
	newC := mk("rp-c")
	saga := sdk.New("rp-saga", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range []*sdk.Step[string, string]{newA, newB, newC} {
			if _, err := s.Call(ctx, in); err != nil {
				return "rolled back", sdk.Compensate(ctx)
			}
		}
		return "done", nil
	})
	newReg := sdk.NewRegistry().MustRegister(newUndoA, newUndoB, newA, newB, newC, saga)

	for _, tc := range []struct {
		name string
		defs []sdk.Definition
		wf   *sdk.Workflow[string, string]
	}{
		{"old log", []sdk.Definition{undoA, undoB, oldA, oldB, oldC, old}, old},
		{"new log", []sdk.Definition{newUndoA, newUndoB, newA, newB, newC, saga}, saga},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.defs...)
			ctx := e.ctx()
			run, err := tc.wf.Start(ctx, e.client, "x")
			if err != nil {
				t.Fatal(err)
			}
			if out, err := run.Result(ctx); err != nil || out != "rolled back" {
				t.Fatalf("Result = %q, %v", out, err)
			}
			evs := e.events(run.ID())
			if tc.wf == old {
				// The run in flight, as it stood before its first undo step.
				for i, ev := range evs {
					if d, ok := ev.Data.(*world.StepCreated); ok && d.StepName == "rp-undo-b" {
						evs = evs[:i+1]
						break
					}
				}
			}
			rep, err := sdk.CheckLog(newReg, evs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wf == saga {
				if !rep.Compatible() || !rep.Returned || string(rep.Output) != `"rolled back"` {
					t.Fatalf("new log: %s", rep)
				}
				return
			}
			d := rep.Divergence
			if d == nil || d.Code != world.CodeReplayDivergence || !strings.Contains(d.Logged, `"rp-undo-b"`) {
				t.Fatalf("old log: %s, want a divergence at the step_created of rp-undo-b", rep)
			}
		})
	}
}
