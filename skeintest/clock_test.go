package skeintest_test

import (
	"context"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// twice sleeps for an hour twice and returns the times it woke.
var twice = workflow.New("twice", func(ctx workflow.Context, _ struct{}) ([]time.Time, error) {
	var woke []time.Time
	for range 2 {
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return nil, err
		}
		woke = append(woke, ctx.Now())
	}
	return woke, nil
})

func twiceRegistry(t *testing.T) *workflow.Registry {
	t.Helper()
	reg := workflow.NewRegistry()
	if err := reg.Register(twice); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestClockWakesEveryTimer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []skeintest.Option
		move func(env *skeintest.Env)
		now  time.Duration // where the clock is at the end, from the start
	}{
		{"automatic", nil, func(*skeintest.Env) {}, 2 * time.Hour},
		{"one Advance over both timers", []skeintest.Option{skeintest.WithManualTime()},
			func(env *skeintest.Env) { env.Advance(3 * time.Hour) }, 3 * time.Hour},
		{"Advance in small steps", []skeintest.Option{skeintest.WithManualTime()}, func(env *skeintest.Env) {
			for range 8 {
				env.Advance(15 * time.Minute)
			}
		}, 2 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := skeintest.New(t, twiceRegistry(t), append(c.opts, skeintest.WithStartTime(start))...)
			run, err := twice.Start(env.Context(), env.Client(), struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			c.move(env)
			woke, err := skeintest.Result(env, run)
			if err != nil {
				t.Fatal(err)
			}
			if len(woke) != 2 || !woke[0].Equal(start.Add(time.Hour)) || !woke[1].Equal(start.Add(2*time.Hour)) {
				t.Errorf("woke at %v, want an hour and two hours after %s", woke, start)
			}
			if got := env.Now().Sub(start); got != c.now {
				t.Errorf("the clock is %s after the start, want %s", got, c.now)
			}
		})
	}
}

func TestManualClockStaysPut(t *testing.T) {
	t.Parallel()
	env := skeintest.New(t, twiceRegistry(t), skeintest.WithStartTime(start), skeintest.WithManualTime())
	run, err := twice.Start(env.Context(), env.Client(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	s := env.WaitSuspended(run.ID())
	if !s.Until().Equal(start.Add(time.Hour)) || s.Token() != "" {
		t.Fatalf("suspension %v, want a sleep until %s", s, start.Add(time.Hour))
	}
	env.Settle()
	time.Sleep(20 * time.Millisecond) // real time does not move the clock
	if !env.Now().Equal(start) {
		t.Fatalf("the manual clock moved to %s by itself", env.Now())
	}
	env.Advance(59 * time.Minute)
	if s := env.WaitSuspended(run.ID()); !s.Until().Equal(start.Add(time.Hour)) {
		t.Fatalf("after 59 minutes: %v", s)
	}
	env.Advance(time.Minute)
	if s := env.WaitSuspended(run.ID()); !s.Until().Equal(start.Add(2 * time.Hour)) {
		t.Fatalf("after an hour: %v, want the second sleep", s)
	}
}

// TestAutomaticClockShowsTheSleep: WaitSuspended sees a run asleep before
// the automatic clock skips the sleep.
func TestAutomaticClockShowsTheSleep(t *testing.T) {
	t.Parallel()
	env := skeintest.New(t, twiceRegistry(t), skeintest.WithStartTime(start))
	run, err := twice.Start(env.Context(), env.Client(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if s := env.WaitSuspended(run.ID()); !s.Until().Equal(start.Add(time.Hour)) {
		t.Fatalf("suspension %v, want the first sleep", s)
	}
	if _, err := skeintest.Result(env, run); err != nil {
		t.Fatal(err)
	}
}

// TestManyRunsInParallel: runs of one environment share its clock; each
// sleeps its own time.
func TestManyRunsInParallel(t *testing.T) {
	t.Parallel()
	napper := workflow.New("napper", func(ctx workflow.Context, d time.Duration) (time.Time, error) {
		err := workflow.Sleep(ctx, d)
		return ctx.Now(), err
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(napper); err != nil {
		t.Fatal(err)
	}
	env := skeintest.New(t, reg, skeintest.WithStartTime(start))
	var runs []*client.Run[time.Time]
	for i := range 20 {
		run, err := napper.Start(context.Background(), env.Client(), time.Duration(20-i)*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	for i, run := range runs {
		woke, err := skeintest.Result(env, run)
		if want := start.Add(time.Duration(20-i) * 24 * time.Hour); err != nil || !woke.Equal(want) {
			t.Errorf("run %d woke at %s (%v), want %s", i, woke, err, want)
		}
	}
}

// TestLingerStaysOff: the environment does not linger for close timers (a
// real wait, 250ms by default, while the virtual clock stands still).
func TestLingerStaysOff(t *testing.T) {
	t.Parallel()
	blink := workflow.New("blink", func(ctx workflow.Context, n int) (int, error) {
		for range n {
			if err := workflow.Sleep(ctx, 100*time.Millisecond); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	env := skeintest.New(t, workflow.NewRegistry().MustRegister(blink), skeintest.WithStartTime(start),
		skeintest.WithTimeout(15*time.Second))
	// Lingering would cost 250ms of real time per sleep: 80 sleeps outlast
	// the 15s bound, which a busy machine's 80 wake-ups without lingering
	// keep well inside.
	run, err := blink.Start(env.Context(), env.Client(), 80)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := skeintest.Result(env, run); err != nil || n != 80 {
		t.Fatalf("result %d, %v", n, err)
	}
	if got := env.Now().Sub(start); got != 8*time.Second {
		t.Errorf("the clock moved %s, want 80 × 100ms", got)
	}
}
