package worldtest

import (
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func readCases() []testCase {
	return []testCase{
		{"not_found", testReadsNotFound},
		{"run_result_mirrors_storage", testReadsRunResult},
	}
}

func testReadsNotFound(t *testing.T, f *fixture) {
	run := f.startedRun()
	other := f.startedRun()
	step := f.createStep(run)
	wait := f.createWait(run, time.Now().Add(time.Hour))
	f.mustCreateHook(run, token())
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"GetRun of an unknown run", func() error {
			_, err := f.w.GetRun(f.ctx, &world.GetRunParams{RunID: ids.New(world.PrefixRun)})
			return err
		}},
		{"GetStep of an unknown run", func() error {
			_, err := f.w.GetStep(f.ctx, &world.GetStepParams{RunID: ids.New(world.PrefixRun), StepID: step})
			return err
		}},
		{"GetStep of an unknown step", func() error {
			_, err := f.w.GetStep(f.ctx, &world.GetStepParams{RunID: run, StepID: ids.New(world.PrefixStep)})
			return err
		}},
		{"GetStep naming another run", func() error {
			_, err := f.w.GetStep(f.ctx, &world.GetStepParams{RunID: other, StepID: step})
			return err
		}},
		{"GetHook of an unknown hook", func() error {
			_, err := f.w.GetHook(f.ctx, &world.GetHookParams{HookID: ids.New(world.PrefixHook)})
			return err
		}},
		{"GetHookByToken of an unknown token", func() error {
			_, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: token()})
			return err
		}},
		// A wait is read only by the commits naming it.
		{"wait_completed of an unknown wait", func() error {
			_, err := f.append(run, ev(ids.New(world.PrefixWait), &world.WaitCompleted{}))
			return err
		}},
		{"wait_completed naming another run's wait", func() error {
			_, err := f.append(other, ev(wait, &world.WaitCompleted{}))
			return err
		}},
	} {
		wantErr(t, tc.call(), world.ErrNotFound, "%s", tc.name)
	}
}

func testReadsRunResult(t *testing.T, f *fixture) {
	run := f.startedRun()
	res := f.mustAppend(run, ev(ids.New(world.PrefixWait), &world.WaitCreated{ResumeAt: time.Now()}))
	got := f.getRun(run)
	if got.Status != res.Run.Status || got.LastSeq != res.Run.LastSeq || got.WorkflowName != res.Run.WorkflowName {
		t.Fatalf("AppendResult.Run %+v differs from GetRun %+v", res.Run, got)
	}
	if got.LastSeq != 3 {
		t.Fatalf("LastSeq after 3 events: %d", got.LastSeq)
	}
}
