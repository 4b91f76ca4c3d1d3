package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestMapRangeFanOutAcrossReplay: a fan-out over a map's keys followed by a
// sleep. After the wake-up the workflow is rebuilt by replay, and ranging
// over the map again visits the keys in another order: every key must get
// its own step's result, or the run must be held by a divergence that
// names both inputs' digests; it must never complete with another key's
// result.
func TestMapRangeFanOutAcrossReplay(t *testing.T) {
	t.Parallel()
	echo := sdk.NewStep("echo", func(_ context.Context, k string) (string, error) { return "result of " + k, nil })
	fan := sdk.New("mapFanOut", func(ctx sdk.Context, keys []string) (map[string]string, error) {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		fs := map[string]sdk.Future[string]{}
		for k := range m {
			fs[k] = echo.Go(ctx, k)
		}
		if err := sdk.Sleep(ctx, 30*time.Millisecond); err != nil {
			return nil, err
		}
		out := map[string]string{}
		for k, f := range fs {
			v, err := f.Get(ctx)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	})
	// No lingering: the sleep ends the invocation, and the next one replays.
	e := newEnvWith(t, envOptions{knobs: []knobs.Option{knobs.WithLinger(-1)}}, fan, echo)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	ctx := e.ctx()
	diverged := 0
	for range 6 {
		run, err := fan.Start(ctx, e.client, keys)
		if err != nil {
			t.Fatal(err)
		}
		var info *sdk.RunInfo
		waitFor(t, "the run to end or be held", func() bool {
			info, err = e.client.GetRun(ctx, run.ID())
			return err == nil && (info.Status.Terminal() || info.Status == world.RunStatusHeld)
		})
		if info.Status == world.RunStatusHeld {
			diverged++
			if msg := info.Hold.Err.Error(); info.Hold.Code != world.CodeReplayDivergence ||
				!strings.Contains(msg, "input digest") || !strings.Contains(msg, `step "echo"`) {
				t.Errorf("held by %s %q, want a divergence naming input digests", info.Hold.Code, msg)
			}
			continue
		}
		out, err := run.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if out[k] != "result of "+k {
				t.Fatalf("key %s got %q: another key's result", k, out[k])
			}
		}
	}
	t.Logf("%d of 6 runs diverged", diverged)
}

// evolving is a workflow deployed in two versions: v1 calls charge-card,
// v2 send-email at the same place; both then wait on the hook "evolving-"
// plus the run's input.
type evolving struct {
	stepA, stepB *sdk.Step[struct{}, int]
	v1, v2       *sdk.Workflow[string, int]
}

func newEvolving() *evolving {
	e := &evolving{
		stepA: sdk.NewStep("charge-card", func(ctx context.Context, _ struct{}) (int, error) { return 1, nil }),
		stepB: sdk.NewStep("send-email", func(ctx context.Context, _ struct{}) (int, error) { return 2, nil }),
	}
	version := func(step *sdk.Step[struct{}, int]) *sdk.Workflow[string, int] {
		return sdk.New("evolving", func(ctx sdk.Context, key string) (int, error) {
			if _, err := step.Call(ctx, struct{}{}); err != nil {
				return 0, err
			}
			return sdk.NewHook[int](ctx, sdk.HookOptions{Token: "evolving-" + key}).Receive(ctx)
		})
	}
	e.v1, e.v2 = version(e.stepA), version(e.stepB)
	return e
}

// deploy runs a worker with reg on lw until the returned stop is called.
func deploy(t *testing.T, ctx context.Context, lw *localworld.World, reg *sdk.Registry) (stop func()) {
	t.Helper()
	return deployOn(t, ctx, sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
}

// deployOn runs a Worker of cfg until stop is called.
func deployOn(t *testing.T, ctx context.Context, cfg sdk.WorkerConfig, opts ...knobs.Option) (stop func()) {
	t.Helper()
	w, err := sdk.NewWorker(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return func() { cancel(); <-done }
}

// heldAfterBadDeploy starts a run with v1 until it waits on its hook,
// deploys v2 and wakes the run with a payload: the run must be held. It
// returns the run's ID and the v2 deployment's stop.
func heldAfterBadDeploy(t *testing.T, ctx context.Context, lw *localworld.World, ev *evolving, key string) (string, func()) {
	t.Helper()
	stop := deploy(t, ctx, lw, sdk.NewRegistry().MustRegister(ev.v1, ev.stepA))
	client, _ := sdk.NewClient(sdk.ClientConfig{World: lw})
	run, err := ev.v1.Start(ctx, client, key)
	if err != nil {
		t.Fatal(err)
	}
	token := "evolving-" + key
	waitFor(t, "v1 waiting on its hook", func() bool { _, err := client.GetHookByToken(ctx, token); return err == nil })
	stop()
	stop = deploy(t, ctx, lw, sdk.NewRegistry().MustRegister(ev.v2, ev.stepB))
	if _, err := client.ResumeHook(ctx, token, 7); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run held", func() bool {
		s, err := statusOfID(ctx, client, run.ID())
		return err == nil && s == world.RunStatusHeld
	})
	return run.ID(), stop
}

// TestReplayDivergence: a suspended run whose code changed incompatibly is
// held, not failed, and says why; deploying compatible code and retrying
// resumes it, with the payload that arrived meanwhile.
func TestReplayDivergence(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ev := newEvolving()
	id, stop := heldAfterBadDeploy(t, ctx, lw, ev, "resume")
	client, _ := sdk.NewClient(sdk.ClientConfig{World: lw})
	info, err := client.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != world.RunStatusHeld || info.Hold == nil || info.Hold.Code != world.CodeReplayDivergence || info.Err != nil || info.ErrorCode != "" {
		t.Fatalf("run %s hold %+v err %v, want held by REPLAY_DIVERGENCE", info.Status, info.Hold, info.Err)
	}
	for _, want := range []string{`"charge-card"`, `"send-email"`} {
		if !strings.Contains(info.Hold.Err.Error(), want) {
			t.Errorf("%q does not name %s", info.Hold.Err, want)
		}
	}
	page, err := client.ListRuns(ctx, sdk.ListRunsOptions{Status: world.RunStatusHeld})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != id || page.Runs[0].Hold == nil {
		t.Fatalf("held runs %+v, %v; want the run with its hold", page, err)
	}
	if n := countEvents((&env{t: t, lw: lw}).events(id), world.EventStepCreated); n != 1 {
		t.Fatalf("%d step_created, want only charge-card's", n)
	}
	// The fix: the old code again, and a retry now.
	stop()
	stop = deploy(t, ctx, lw, sdk.NewRegistry().MustRegister(ev.v1, ev.stepA))
	defer stop()
	if err := client.RetryRun(ctx, id); err != nil {
		t.Fatal(err)
	}
	var got int
	if err := client.Result(ctx, id, &got); err != nil || got != 7 {
		t.Fatalf("result %d, %v; want the payload 7", got, err)
	}
	if err := client.RetryRun(ctx, id); !errors.Is(err, world.ErrConflict) {
		t.Errorf("RetryRun on a completed run: %v, want ErrConflict", err)
	}
}

// TestHeldRunFailOrCancel: a held run can be failed or cancelled by hand.
func TestHeldRunFailOrCancel(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"fail", "cancel"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			id, stop := heldAfterBadDeploy(t, ctx, lw, newEvolving(), how)
			defer stop()
			client, _ := sdk.NewClient(sdk.ClientConfig{World: lw})
			if how == "cancel" {
				if err := client.Cancel(ctx, id, "bad deploy"); err != nil {
					t.Fatal(err)
				}
				if err := client.Result(ctx, id, nil); !errors.Is(err, sdk.ErrRunCancelled) {
					t.Fatalf("result %v, want cancelled", err)
				}
				return
			}
			if err := client.FailRun(ctx, id, "bad deploy"); err != nil {
				t.Fatal(err)
			}
			err = client.Result(ctx, id, nil)
			rf := mustAs[*sdk.RunFailedError](t, err)
			if rf.Code != world.CodeReplayDivergence || !strings.Contains(err.Error(), "bad deploy") {
				t.Fatalf("result %v, want REPLAY_DIVERGENCE failed on request", err)
			}
			if err := client.FailRun(ctx, id, "again"); !errors.Is(err, world.ErrConflict) {
				t.Errorf("FailRun on a failed run: %v, want ErrConflict", err)
			}
		})
	}
}
