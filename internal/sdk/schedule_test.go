package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/schedule"
	"github.com/skeinflow/skein/world"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

type tick struct {
	N int `json:"n"`
}

var scheduled = sdk.New("scheduled", func(ctx sdk.Context, in tick) (int, error) {
	return double.Call(ctx, in.N)
})

var double = sdk.NewStep("double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })

func scheduleRegistry(t *testing.T) *sdk.Registry {
	t.Helper()
	reg := sdk.NewRegistry()
	if err := reg.Register(scheduled, double); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestWorkerRefusesBadSchedules(t *testing.T) {
	t.Parallel()
	good := sdk.Schedule{Name: "s", Expr: "@hourly", Workflow: "scheduled"}
	with := func(f func(*sdk.Schedule)) []sdk.Schedule {
		s := good
		f(&s)
		return []sdk.Schedule{s}
	}
	cases := []struct {
		name      string
		schedules []sdk.Schedule
		want      string
		target    any
	}{
		{"bad cron", with(func(s *sdk.Schedule) { s.Expr = "0 25 * * *" }), `schedule "s": schedule: expression "0 25 * * *": hour field: 25 is out of range 0-23`, new(*schedule.ParseError)},
		{"bad rate", with(func(s *sdk.Schedule) { s.Expr = "rate(5 weeks)" }), `expression "rate(5 weeks)": rate unit`, new(*schedule.ParseError)},
		{"four fields", with(func(s *sdk.Schedule) { s.Expr = "0 0 * *" }), "want 5 fields", new(*schedule.ParseError)},
		{"time zone", with(func(s *sdk.Schedule) { s.TimeZone = "Mars/Olympus" }), `time zone "Mars/Olympus"`, nil},
		{"unknown workflow", with(func(s *sdk.Schedule) { s.Workflow = "nope" }), `"nope"`, new(*sdk.RequestError)},
		{"no name", with(func(s *sdk.Schedule) { s.Name = "" }), "no name", nil},
		{"negative catch-up", with(func(s *sdk.Schedule) { s.CatchUp = -time.Second }), "negative CatchUp", nil},
		{"input", with(func(s *sdk.Schedule) { s.Input = func() {} }), "schedule input", new(*sdk.SerializationError)},
		{"input of the wrong type", with(func(s *sdk.Schedule) { s.Input = "seven" }), `input of workflow "scheduled" does not decode`, new(*sdk.RequestError)},
		{"input of the wrong field type", with(func(s *sdk.Schedule) { s.Input = map[string]any{"n": "seven"} }), "tick.n", new(*sdk.RequestError)},
		{"same name twice", []sdk.Schedule{good, good}, "two schedules have this name", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			_, err = sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: scheduleRegistry(t), Schedules: c.schedules})
			var se *sdk.RegistrationError
			if !errors.As(err, &se) || se.Kind != "schedule" || se.Name != c.schedules[len(c.schedules)-1].Name || !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewWorker = %v, want a *RegistrationError of a schedule with %q", err, c.want)
			}
			if c.target != nil && !errors.As(err, c.target) {
				t.Errorf("NewWorker = %v, not a %T", err, c.target)
			}
		})
	}
}

// scheduledRuns returns the idempotency keys of the runs of the workflow
// "scheduled", sorted, once every one has completed.
func scheduledRuns(t *testing.T, c *sdk.Client, want int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := c.ListRuns(context.Background(), sdk.ListRunsOptions{WorkflowName: "scheduled", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		done := 0
		for _, r := range page.Runs {
			keys = append(keys, r.IdempotencyKey)
			if r.Status == world.RunStatusCompleted {
				done++
			}
		}
		sort.Strings(keys)
		if (len(keys) >= want && done == len(keys)) || time.Now().After(deadline) {
			return keys
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startWorkers(t *testing.T, n int, cfg sdk.WorkerConfig, opts ...knobs.Option) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		w, err := sdk.NewWorker(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// A Worker fires its schedules on its clock: one run per firing, keyed by
// the schedule's name and the scheduled time; a clock that jumps over
// several firings starts only the latest. Two workers on one store start
// one run per firing.
func TestWorkerFiresSchedules(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 2} {
		t.Run(map[int]string{1: "one worker", 2: "two workers"}[workers], func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			base := time.Date(2026, 11, 24, 10, 0, 30, 0, time.UTC)
			clock := &testClock{t: base}
			stop := startWorkers(t, workers, sdk.WorkerConfig{
				World: lw, Registry: scheduleRegistry(t),
				Schedules: []sdk.Schedule{{Name: "every-minute", Expr: "* * * * *", Workflow: "scheduled", Input: tick{N: 21}}},
			}, knobs.WithNow(clock.Now), knobs.WithScheduleTick(2*time.Millisecond), knobs.WithPollWait(10*time.Millisecond))
			defer stop()
			c, err := sdk.NewClient(sdk.ClientConfig{World: lw, Registry: scheduleRegistry(t)})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if keys := scheduledRuns(t, c, 0); len(keys) != 0 {
				t.Fatalf("runs before the first firing: %v", keys)
			}
			clock.Set(base.Add(30 * time.Second)) // 10:01:00
			scheduledRuns(t, c, 1)
			clock.Set(base.Add(3*time.Minute + 40*time.Second)) // 10:04:10: 10:02 and 10:03 are skipped
			keys := scheduledRuns(t, c, 2)
			time.Sleep(30 * time.Millisecond) // a second worker's late firing would show now
			keys = scheduledRuns(t, c, len(keys))
			want := []string{"schedule:every-minute:2026-11-24T10:01:00Z", "schedule:every-minute:2026-11-24T10:04:00Z"}
			if strings.Join(keys, " ") != strings.Join(want, " ") {
				t.Fatalf("runs %v, want %v", keys, want)
			}
			page, err := c.ListRuns(context.Background(), sdk.ListRunsOptions{WorkflowName: "scheduled"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Runs {
				var out int
				if err := c.Result(context.Background(), r.ID, &out); err != nil || out != 42 {
					t.Errorf("run %s: result %d, %v", r.ID, out, err)
				}
				if r.Attributes[sdk.AttrSchedule] != "every-minute" || !strings.HasSuffix(r.IdempotencyKey, r.Attributes[sdk.AttrScheduledTime]) {
					t.Errorf("run %s: attributes %v, key %s", r.ID, r.Attributes, r.IdempotencyKey)
				}
			}
		})
	}
}

// A starting Worker starts the latest firing missed within CatchUp, and
// none without it.
func TestWorkerScheduleCatchUp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		catchUp time.Duration
		want    []string
	}{
		{"none", 0, nil},
		{"too short", 2 * time.Minute, nil},
		{"latest only", time.Hour, []string{"schedule:five:2026-11-24T10:05:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			clock := &testClock{t: time.Date(2026, 11, 24, 10, 7, 30, 0, time.UTC)}
			stop := startWorkers(t, 1, sdk.WorkerConfig{
				World: lw, Registry: scheduleRegistry(t),
				Schedules: []sdk.Schedule{{Name: "five", Expr: "@every 5m", Workflow: "scheduled", CatchUp: c.catchUp}},
			}, knobs.WithNow(clock.Now), knobs.WithScheduleTick(2*time.Millisecond), knobs.WithPollWait(10*time.Millisecond))
			defer stop()
			client, err := sdk.NewClient(sdk.ClientConfig{World: lw})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond)
			keys := scheduledRuns(t, client, len(c.want))
			if strings.Join(keys, " ") != strings.Join(c.want, " ") {
				t.Fatalf("runs %v, want %v", keys, c.want)
			}
		})
	}
}

// flakyStarts fails the first fail run creations.
type flakyStarts struct {
	*localworld.World
	mu       sync.Mutex
	fail     int
	attempts int
}

func (f *flakyStarts) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if len(p.Events) > 0 {
		if _, ok := p.Events[0].Data.(*world.RunCreated); ok {
			f.mu.Lock()
			f.attempts++
			failing := f.attempts <= f.fail
			f.mu.Unlock()
			if failing {
				return nil, errors.New("store unavailable")
			}
		}
	}
	return f.World.Append(ctx, p)
}

// A firing whose run cannot be started (the store fails) is tried again a
// tick later, not in a tight loop, until it starts.
func TestWorkerRetriesAFailedFiring(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	fw := &flakyStarts{World: lw, fail: 3}
	clock := &testClock{t: time.Date(2026, 11, 24, 10, 0, 59, 0, time.UTC)}
	stop := startWorkers(t, 1, sdk.WorkerConfig{
		World: fw, Registry: scheduleRegistry(t),
		Schedules: []sdk.Schedule{{Name: "m", Expr: "* * * * *", Workflow: "scheduled"}},
	}, knobs.WithNow(clock.Now), knobs.WithScheduleTick(20*time.Millisecond), knobs.WithPollWait(10*time.Millisecond))
	defer stop()
	time.Sleep(30 * time.Millisecond) // the worker has read the clock
	started := time.Now()
	clock.Set(time.Date(2026, 11, 24, 10, 1, 0, 0, time.UTC))
	c, err := sdk.NewClient(sdk.ClientConfig{World: lw})
	if err != nil {
		t.Fatal(err)
	}
	keys := scheduledRuns(t, c, 1)
	if len(keys) != 1 || keys[0] != "schedule:m:2026-11-24T10:01:00Z" {
		t.Fatalf("runs %v", keys)
	}
	fw.mu.Lock()
	attempts := fw.attempts
	fw.mu.Unlock()
	if took := time.Since(started); attempts != 4 || took < 3*20*time.Millisecond {
		t.Errorf("%d attempts in %s, want 4, a tick apart", attempts, took)
	}
}
