package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

// The catalogue's sleeps, scaled down: 10 s -> 300 ms, 1 s -> 100 ms.

func TestSleep(t *testing.T) {
	t.Parallel()
	type span struct{ Start, End time.Time }
	sleeping := sdk.New("sleeping", func(ctx sdk.Context, d time.Duration) (span, error) {
		start := ctx.Now()
		if err := sdk.Sleep(ctx, d); err != nil {
			return span{}, err
		}
		return span{start, ctx.Now()}, nil
	})
	parallel := sdk.New("parallelSleep", func(ctx sdk.Context, d time.Duration) (int, error) {
		var fs []sdk.Future[struct{}]
		for range 10 {
			fs = append(fs, sdk.NewTimer(ctx, d))
		}
		_, err := sdk.All(ctx, fs...)
		return len(fs), err
	})
	e := newEnv(t, sleeping, parallel)

	t.Run("sleeping", func(t *testing.T) {
		t.Parallel()
		ctx := e.ctx()
		began := time.Now()
		run, err := sleeping.Start(ctx, e.client, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got, err := run.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(began); el < 300*time.Millisecond {
			t.Errorf("elapsed %s < 300ms", el)
		}
		if !got.Start.Before(got.End) || got.End.Sub(got.Start) < 300*time.Millisecond {
			t.Errorf("workflow time %s -> %s", got.Start, got.End)
		}
	})
	t.Run("parallel", func(t *testing.T) {
		t.Parallel()
		ctx := e.ctx()
		// Ten timers of 1s at once: one after the other they would take
		// 10s, so 8s tells them apart with 7s to spare on a busy machine.
		began := time.Now()
		run, err := parallel.Start(ctx, e.client, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(began); el < time.Second || el > 8*time.Second {
			t.Errorf("elapsed %s, want 1s..8s", el)
		}
	})
}

func TestSleepVersusStep(t *testing.T) {
	t.Parallel()
	slow := sdk.NewStep("slow", func(ctx context.Context, d time.Duration) (string, error) {
		return "step", sleepCtx(ctx, d)
	})
	race := sdk.New("sleepRace", func(ctx sdk.Context, d [2]time.Duration) (string, error) {
		step := slow.Go(ctx, d[0])
		timer := sdk.NewTimer(ctx, d[1])
		if sdk.Select(ctx, step, timer) == 1 {
			return "sleep", nil
		}
		return step.Get(ctx)
	})
	e := newEnv(t, race, slow)
	for _, tc := range []struct {
		name       string
		step, wait time.Duration
		want       string
	}{
		// The loser takes an hour: a run that ends within 15s did not
		// wait for it, however busy the machine.
		{"sleepWins", time.Hour, 100 * time.Millisecond, "sleep"},
		{"stepWins", 100 * time.Millisecond, time.Hour, "step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			began := time.Now()
			run, err := race.Start(ctx, e.client, [2]time.Duration{tc.step, tc.wait})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil || got != tc.want {
				t.Fatalf("result = %q, %v; want %q", got, err, tc.want)
			}
			if el := time.Since(began); el > 15*time.Second {
				t.Errorf("took %s, as if it waited for the loser (an hour)", el)
			}
		})
	}
}

func TestSleepInLoop(t *testing.T) {
	t.Parallel()
	stamp := sdk.NewStep("stamp", func(ctx context.Context, _ int) (time.Time, error) { return time.Now(), nil })
	loop := sdk.New("sleepInLoop", func(ctx sdk.Context, d time.Duration) ([]time.Time, error) {
		var out []time.Time
		for i := range 3 {
			ts, err := stamp.Call(ctx, i)
			if err != nil {
				return nil, err
			}
			out = append(out, ts)
			if i < 2 {
				if err := sdk.Sleep(ctx, d); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	})
	e := newEnv(t, loop, stamp)
	ctx := e.ctx()
	run, err := loop.Start(ctx, e.client, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := run.Result(ctx)
	if err != nil || len(ts) != 3 {
		t.Fatalf("result = %v, %v", ts, err)
	}
	for i := 1; i < 3; i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < 150*time.Millisecond {
			t.Errorf("gap %d = %s < 150ms", i, gap)
		}
	}
	if total := ts[2].Sub(ts[0]); total < 300*time.Millisecond {
		t.Errorf("total %s < 300ms", total)
	}
}

func TestSleepWakesOnTime(t *testing.T) {
	t.Parallel()
	stamp := sdk.NewStep("now", func(ctx context.Context, _ struct{}) (time.Time, error) { return time.Now(), nil })
	wf2 := sdk.New("wake2", func(ctx sdk.Context, d time.Duration) ([2]time.Time, error) {
		due := ctx.Now().Add(d)
		if err := sdk.Sleep(ctx, d); err != nil {
			return [2]time.Time{}, err
		}
		woke, err := stamp.Call(ctx, struct{}{})
		return [2]time.Time{due, woke}, err
	})
	// Linger disabled: the wake-up goes through a delayed continuation.
	e := newEnvWith(t, envOptions{knobs: []knobs.Option{knobs.WithLinger(-1)}}, wf2, stamp)
	ctx := e.ctx()
	run, err := wf2.Start(ctx, e.client, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := got[1].Sub(got[0])
	t.Logf("woke %s after the wait's time", late)
	if late < 0 || late > time.Second {
		t.Errorf("woke %s after the wait's time, want within 1s", late)
	}
}
