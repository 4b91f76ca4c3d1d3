package worldtest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// TestPollerFollowsRunUntilDeactivated: an every-run watch of a
// watch.Poller delivers what a run records after its end (its
// compensations, run_deactivated) even once the run is too old for a
// look's listing of new runs: it follows the run until run_deactivated.
func TestPollerFollowsRunUntilDeactivated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := newMemWorld("")
	p := &watch.Poller{Storage: w, Overlap: 20 * time.Millisecond}
	src := world.NewIDSource(nil, nil)
	run, step := src.New(world.PrefixRun), src.New(world.PrefixStep)
	app := func(evs ...world.EventInput) {
		t.Helper()
		if _, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	on := func(d world.EventData) world.EventInput { return world.EventInput{CorrelationID: step, Data: d} }
	app(world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	app(on(&world.StepCreated{StepName: "charge", Compensation: "refund"}), on(&world.StepStarted{}), on(&world.StepCompleted{Result: json.RawMessage(`1`)}))
	cursor, err := p.WatchCursor(ctx, &world.WatchParams{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan world.EventType, 16)
	go func() {
		for e, err := range p.Watch(ctx, &world.WatchParams{After: cursor, PollMin: 2 * time.Millisecond, PollMax: 5 * time.Millisecond}) {
			if err != nil {
				return
			}
			got <- e.Event.Type()
		}
	}()
	next := func(want world.EventType) {
		t.Helper()
		select {
		case e := <-got:
			if e != want {
				t.Fatalf("watched %s, want %s", e, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %s delivered", want)
		}
	}
	app(world.EventInput{Data: &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, Compensate: true}})
	next(world.EventRunFailed)
	time.Sleep(100 * time.Millisecond) // looks go by: the run is no longer new
	app(on(&world.CompStarted{}))
	next(world.EventCompStarted)
	time.Sleep(50 * time.Millisecond)
	app(on(&world.CompSucceeded{}), world.EventInput{Data: &world.RunDeactivated{}})
	next(world.EventCompSucceeded)
	next(world.EventRunDeactivated)
}
