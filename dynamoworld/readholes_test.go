package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// deleteItem deletes one item of a run's partition by its sort key.
func (f *gapsFixture) deleteItem(t *testing.T, runID, sk string) {
	t.Helper()
	_, err := f.c.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.cfg.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + runID},
			"sk": &types.AttributeValueMemberS{Value: sk},
		},
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatalf("delete %s of run %s: %v", sk, runID, err)
	}
}

// TestMissingRunHead: the trial deleted a run's head item (e~) and GetRun
// said world.ErrNotFound while AllEvents returned the run's events. A
// partition with commits and no head is now world.ErrCorrupt naming the
// head on every read of the run: GetRun, ListEvents either way (descending
// on its first page, ascending on the page that reaches the head's key),
// an Append (its load), and ListRuns through an index that names it.
func TestMissingRunHead(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	run := completedRun(t, w)
	mustAppend(t, w, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"holes": run}}})
	f.deleteItem(t, run, "e~")
	wantHead := func(what string, err error) {
		t.Helper()
		wantGap(t, what, err, f.cfg.Table, run, "head item e~ is missing")
	}
	_, err := f.open(t).GetRun(ctx, &world.GetRunParams{RunID: run})
	wantHead("GetRun", err)
	_, err = runrules.AllEvents(ctx, f.open(t), run)
	wantHead("AllEvents", err)
	for _, limit := range []int{1, 3, 100} {
		for _, desc := range []bool{false, true} {
			evs, err := listPaged(ctx, f.open(t), run, limit, desc)
			wantHead(fmt.Sprintf("ListEvents limit %d desc %v (read %d events)", limit, desc, len(evs)), err)
			if desc && len(evs) > 0 {
				t.Errorf("descending, limit %d: %d events returned before the error", limit, len(evs))
			}
		}
	}
	_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{}}}})
	wantHead("Append", err)
	_, err = f.open(t).ListRuns(ctx, &world.ListRunsParams{Attribute: &world.AttributeFilter{Key: "holes", Value: run}})
	wantHead("ListRuns by attribute", err)
	if keys := f.commitKeys(t, run); len(keys) != 6 {
		t.Fatalf("commits %v, want the run's 6: nothing written", keys)
	}
	// A run that does not exist is still not found.
	if _, err := f.open(t).GetRun(ctx, &world.GetRunParams{RunID: ids.New(world.PrefixRun)}); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("GetRun of no run: %v, want world.ErrNotFound", err)
	}
}

// TestMissingFirstCommitDescending: the trial deleted a run's first commit
// (e#0) and a descending ListEvents returned its first pages as fine,
// failing only at the last. The first page of a read back from the end
// that stops before the log's start now checks that the first commit is
// there (one Query of its key), and returns no event of a log that cannot
// reach event 1: world.ErrCorrupt naming the missing range.
func TestMissingFirstCommitDescending(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run := completedRun(t, f.open(t))
	intact := completedRun(t, f.open(t))
	f.deleteCommit(t, run, 0) // run_created, run_started: events 1-2
	for _, limit := range []int{1, 2, 100} {
		for _, desc := range []bool{false, true} {
			evs, err := listPaged(ctx, f.open(t), run, limit, desc)
			wantGap(t, fmt.Sprintf("ListEvents limit %d desc %v", limit, desc), err, f.cfg.Table, run, "events 1-2")
			if desc && len(evs) > 0 {
				t.Errorf("descending, limit %d: %d events returned before the error", limit, len(evs))
			}
		}
	}
	// The check costs one small read on an intact run's first page, and
	// the pages still read the whole log.
	w := f.open(t)
	w.ReportCapacity()
	evs, err := listPaged(ctx, w, intact, 2, true)
	if err != nil || len(evs) != 6 || evs[0].Seq != 6 || evs[5].Seq != 1 {
		t.Fatalf("an intact run, descending by 2: %d events (%v)", len(evs), err)
	}
	t.Logf("an intact run of 6 events read back by pages of 2: %.1f read units", w.Stats().ReadCapacity)
}

// TestMissingStepItem: the trial deleted a step item, and ListSteps
// silently returned fewer steps. Every commit now carries the run's count
// of steps (ns); a listing whole in one page, either way, with fewer
// steps than the newest commit counts is world.ErrCorrupt.
func TestMissingStepItem(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	run, first, second := startedRun(t, w), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{CorrelationID: first, Data: &world.StepCreated{StepName: "a", Input: []byte(`1`)}})
	// A fresh World's commit counts on from its load's newest commit.
	mustAppend(t, f.open(t), run, world.EventInput{CorrelationID: second, Data: &world.StepCreated{StepName: "b", Input: []byte(`2`)}})
	// A lazy step (created and started in one commit, no item) counts too.
	lazy := ids.New(world.PrefixStep)
	w = f.open(t)
	if _, err := runrules.AllEvents(ctx, w, run); err != nil { // primes w's cache: it may make the step lazy
		t.Fatal(err)
	}
	mustAppend(t, w, run, world.EventInput{CorrelationID: lazy, Data: &world.StepCreated{StepName: "c", Input: []byte(`3`)}},
		world.EventInput{CorrelationID: lazy, Data: &world.StepStarted{}})
	got, err := f.c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.cfg.Table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "r#" + run},
		"sk": &types.AttributeValueMemberS{Value: "s#" + lazy},
	}})
	if err != nil || len(got.Item) != 0 {
		t.Fatalf("the lazy step has an item (%v): the test needs one without", err)
	}
	for _, desc := range []bool{false, true} {
		p, err := f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Descending: desc}})
		if err != nil || len(p.Items) != 3 {
			t.Fatalf("ListSteps of the intact run (desc %v): %v, %v", desc, p, err)
		}
	}
	f.deleteItem(t, run, "s#"+second)
	for _, desc := range []bool{false, true} {
		_, err := f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Descending: desc}})
		// The log names the step, and does not leave it bare: its item
		// is missing (a run of a version 1 table, without the log's
		// check, is caught by the count: "1 of its 3 step items").
		wantGap(t, fmt.Sprintf("ListSteps desc %v", desc), err, f.cfg.Table, run, "step "+second+" has no item")
	}
}

// TestExpiredRunItemsAreGone: DynamoDB's TTL deletes an expired run's
// items one by one, so past the run's retention a missing head, first
// commit or step item is world.ErrGone (the run has expired), not
// world.ErrCorrupt; before it, the same absence is damage.
func TestExpiredRunItemsAreGone(t *testing.T) {
	f := newGapsFixture(t)
	f.cfg.Retention = time.Hour
	ctx := context.Background()
	w := f.open(t)
	run, step := startedRun(t, w), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`2`)}})
	f.deleteItem(t, run, "s#"+step)
	f.deleteCommit(t, run, 0)
	later := f.cfg
	laterNow := knobs.WithNow(func() time.Time { return time.Now().Add(2 * time.Hour) })
	openLater := func() *dynamoworld.World {
		lw, err := dynamoworld.New(ctx, later, laterNow)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lw.Close() })
		return lw
	}
	steps := func(w *dynamoworld.World) error {
		_, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: run})
		return err
	}
	firstPage := func(w *dynamoworld.World) error {
		_, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 1, Descending: true}})
		return err
	}
	for what, read := range map[string]func(*dynamoworld.World) error{"ListSteps": steps, "descending ListEvents": firstPage} {
		if err := read(f.open(t)); !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("%s within the retention: %v, want world.ErrCorrupt", what, err)
		}
		if err := read(openLater()); !errors.Is(err, world.ErrGone) {
			t.Fatalf("%s past the retention: %v, want world.ErrGone", what, err)
		}
	}
	f.deleteItem(t, run, "e~")
	if _, err := f.open(t).GetRun(ctx, &world.GetRunParams{RunID: run}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("GetRun without its head within the retention: %v, want world.ErrCorrupt", err)
	}
	if _, err := openLater().GetRun(ctx, &world.GetRunParams{RunID: run}); !errors.Is(err, world.ErrGone) {
		t.Fatalf("GetRun without its head past the retention: %v, want world.ErrGone", err)
	}
}
