package dynamoworld_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestWideFanOut: a workflow that starts 150 steps at once (more than one
// DynamoDB transaction can create: 100 items) commits them in several
// Appends (world.AppendFits) and completes, with each step completed once.
func TestWideFanOut(t *testing.T) {
	const n = 150
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	square := workflow.NewStep("square", func(ctx context.Context, i int) (int, error) { return i * i, nil })
	wide := workflow.New("wide", func(ctx workflow.Context, n int) (int, error) {
		fs := make([]workflow.Future[int], n)
		for i := range n {
			fs[i] = square.Go(ctx, i)
		}
		vs, err := workflow.All(ctx, fs...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, nil
	})
	reg := workflow.NewRegistry().MustRegister(wide, square)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 4}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	run, err := wide.Start(ctx, wk.Client(), n)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	sum, err := run.Result(ctx)
	if err != nil {
		t.Fatalf("run %s: %v", run.ID(), err)
	}
	if want := (n - 1) * n * (2*n - 1) / 6; sum != want {
		t.Fatalf("run %s: sum of squares %d, want %d", run.ID(), sum, want)
	}
	created, completed := map[string]int{}, map[string]int{}
	cursor := ""
	for {
		page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 100, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Items {
			switch e.Type() {
			case world.EventStepCreated:
				created[e.CorrelationID]++
			case world.EventStepCompleted:
				completed[e.CorrelationID]++
			}
		}
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	if len(created) != n || len(completed) != n {
		t.Fatalf("run %s: %d steps created, %d completed; want %d", run.ID(), len(created), len(completed), n)
	}
	for id, c := range completed {
		if c != 1 || created[id] != 1 {
			t.Fatalf("step %s: created %d times, completed %d times; want once", id, created[id], c)
		}
	}
	t.Logf("%d steps in %v", n, time.Since(started).Round(time.Millisecond))
}
