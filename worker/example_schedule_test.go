package worker_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"sync"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/schedule"
	skworker "github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// A Worker fires its schedules on its clock; here a clock the example moves
// by hand, as a test would.
func ExampleSchedule() {
	var report = workflow.New("report", func(ctx workflow.Context, days int) (string, error) {
		return fmt.Sprintf("report over %d day(s)", days), nil
	})
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	reg := workflow.NewRegistry()
	if err := reg.Register(report); err != nil {
		panic(err)
	}
	clock := &testClock{t: time.Date(2026, 11, 24, 2, 29, 0, 0, time.UTC)}
	wk, err := skworker.New(skworker.Config{
		World: w, Registry: reg,
		Schedules: []skworker.Schedule{{Name: "nightly", Expr: "30 2 * * *", Workflow: "report", Input: 1}},
	}, knobs.WithNow(clock.Now), knobs.WithScheduleTick(5*time.Millisecond))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	defer func() { cancel(); <-done }()

	time.Sleep(20 * time.Millisecond)
	clock.Set(time.Date(2026, 11, 24, 2, 30, 0, 0, time.UTC)) // the schedule fires
	for {
		page, err := wk.Client().ListRuns(ctx, client.ListRunsOptions{WorkflowName: "report"})
		if err != nil {
			panic(err)
		}
		if len(page.Runs) == 1 && page.Runs[0].Status == world.RunStatusCompleted {
			var out string
			if err := wk.Client().Result(ctx, page.Runs[0].ID, &out); err != nil {
				panic(err)
			}
			fmt.Println(page.Runs[0].IdempotencyKey, out)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A schedule that does not parse is refused when the Worker is made.
	_, err = skworker.New(skworker.Config{
		World: w, Registry: reg, Schedules: []skworker.Schedule{{Name: "typo", Expr: "30 2 * *", Workflow: "report"}},
	})
	var pe *schedule.ParseError
	fmt.Println(errors.As(err, &pe), err)
	// Output:
	// schedule:nightly:2026-11-24T02:30:00Z report over 1 day(s)
	// true workflow: schedule "typo": schedule: expression "30 2 * *": want 5 fields (minute hour day-of-month month day-of-week), have 4
}

// testClock is a clock the example moves by hand.
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
