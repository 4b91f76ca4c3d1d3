package dynamoworld_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestCompensationAcrossWorlds: two Worlds on one table, as two processes.
// A step created and started in one commit (a lazy step: no item yet)
// declares a compensation; the other World caches the run from its log,
// completes the step (it owes its compensation: the primed snapshot knows
// the compensation from the replayed step_created), the first World,
// whose cache is stale, starts the compensation (its fence fails, it reads
// afresh), and both record the compensation's outcome at once: exactly one
// is recorded, and both read the same counts.
func TestCompensationAcrossWorlds(t *testing.T) {
	dynamotest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	var ws [2]*dynamoworld.World
	for i := range ws {
		w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws[i] = w
	}
	a, b := ws[0], ws[1]
	run := startedRun(t, a)
	st := ids.New(world.PrefixStep)
	on := func(d world.EventData) world.EventInput { return world.EventInput{CorrelationID: st, Data: d} }
	mustAppend(t, a, run, on(&world.StepCreated{StepName: "charge", Compensation: "refund"}), on(&world.StepStarted{LeaseTTL: time.Minute}))
	if _, err := b.ListEvents(ctx, &world.ListEventsParams{RunID: run}); err != nil {
		t.Fatal(err)
	}
	if !dynamoworld.Cached(b, run).Complete {
		t.Fatal("the log read cached no complete snapshot")
	}
	if diff, err := dynamoworld.CheckCached(ctx, b, run, true); err != nil || diff != "" {
		t.Fatalf("the primed snapshot differs from a fresh read: %s %v", diff, err)
	}
	if res := mustAppend(t, b, run, on(&world.StepCompleted{Result: json.RawMessage(`"paid"`)})); res.Run.Compensations.Owed != 1 {
		t.Fatalf("step_completed of a primed lazy step: counts %+v, want one owed", res.Run.Compensations)
	}
	if res := mustAppend(t, a, run, on(&world.CompStarted{LeaseTTL: time.Minute})); res.Run.Compensations != (world.Compensations{Running: 1}) ||
		res.Results[0].Step.Compensation.Step != "refund" {
		t.Fatalf("comp_started on a stale cache: counts %+v step %+v", res.Run.Compensations, res.Results[0].Step)
	}
	errs := make(chan error, 2)
	for i, w := range ws {
		var d world.EventData = &world.CompSucceeded{}
		if i == 1 {
			d = &world.CompFailed{Error: &world.ErrorData{Message: "declined"}}
		}
		go func() {
			_, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{on(d)}})
			errs <- err
		}()
	}
	won := 0
	for range ws {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, world.ErrConflict):
			t.Fatalf("the losing outcome: %v, want a conflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d outcomes of one compensation recorded, want 1", won)
	}
	for i, w := range ws {
		got, err := w.GetRun(ctx, &world.GetRunParams{RunID: run})
		if err != nil {
			t.Fatal(err)
		}
		if c := got.Compensations; c.Running != 0 || c.Owed != 0 || c.Succeeded+c.Failed != 1 {
			t.Fatalf("World %d reads counts %+v, want one outcome", i, c)
		}
		s, err := w.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: st})
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != world.StepStatusCompensated && s.Status != world.StepStatusCompensationFailed {
			t.Fatalf("World %d reads the step %s", i, s.Status)
		}
	}
	mustAppend(t, b, run, world.EventInput{Data: &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, Compensate: true}})
	mustAppend(t, a, run, world.EventInput{Data: &world.RunDeactivated{}})
	for i, w := range ws {
		if diff, err := dynamoworld.CheckCached(ctx, w, run, true); err != nil || diff != "" {
			t.Fatalf("World %d's cache differs from a fresh read: %s %v", i, diff, err)
		}
	}
}

// TestWatchAllFollowsRunUntilDeactivated: an every-run watch follows a
// run it knows of until its run_deactivated, so the compensations it
// records after its end are delivered, also for a run created long before
// (which no look's listing of new runs returns).
func TestWatchAllFollowsRunUntilDeactivated(t *testing.T) {
	dynamotest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	cfg := dynamotest.Config(c, r, url)
	old, err := dynamoworld.New(ctx, cfg, knobs.WithNow(func() time.Time { return time.Now().Add(-time.Hour) })) // its runs are an hour old
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run := startedRun(t, old)
	st := ids.New(world.PrefixStep)
	on := func(d world.EventData) world.EventInput { return world.EventInput{CorrelationID: st, Data: d} }
	mustAppend(t, w, run, on(&world.StepCreated{StepName: "charge", Compensation: "refund"}), on(&world.StepStarted{}), on(&world.StepCompleted{}))
	cursor, err := w.WatchCursor(ctx, &world.WatchParams{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan world.EventType, 16)
	go func() {
		for e, err := range w.Watch(ctx, &world.WatchParams{After: cursor, PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond}) {
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
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s delivered", want)
		}
	}
	mustAppend(t, w, run, world.EventInput{Data: &world.RunFailed{Error: &world.ErrorData{Message: "boom"}, Compensate: true}})
	next(world.EventRunFailed)
	time.Sleep(100 * time.Millisecond) // looks go by after the end
	mustAppend(t, w, run, on(&world.CompStarted{}))
	next(world.EventCompStarted)
	mustAppend(t, w, run, on(&world.CompSucceeded{}), world.EventInput{Data: &world.RunDeactivated{}})
	next(world.EventCompSucceeded)
	next(world.EventRunDeactivated)
}
