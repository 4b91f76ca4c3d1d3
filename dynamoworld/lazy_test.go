package dynamoworld_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// TestLazyStep: a step created and started in one commit by the World that
// created the run has no item; another World reads it (GetStep, ListSteps),
// refuses its creation again, renews its lease (which writes its lease
// record, not its item: a third World reads the renewed lease, and the
// first, which never saw it, is refused a takeover), and the first World
// completes it without writing an item: the step is bare, and Worlds that
// never saw it read it from the log, refuse its creation, completion and
// renewal again, and list it.
func TestLazyStep(t *testing.T) {
	ctx := context.Background()
	newWorld, c := takeoverWorlds(t)
	w1, w2 := newWorld(), newWorld()
	run := startedRun(t, w1)
	pending, lazy := ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, w1, run, world.EventInput{CorrelationID: pending, Data: &world.StepCreated{StepName: "p"}})
	mustAppend(t, w1, run, world.EventInput{CorrelationID: lazy, Data: &world.StepCreated{StepName: "l", Input: []byte(`{"in":1}`)}},
		world.EventInput{CorrelationID: lazy, Data: &world.StepStarted{LeaseTTL: time.Minute}})
	hasItem := func(id string) bool {
		out, err := c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w1.Config().Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#" + run}, "sk": &types.AttributeValueMemberS{Value: "s#" + id}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Item) > 0
	}
	if hasItem(lazy) || !hasItem(pending) {
		t.Fatalf("items: lazy step %v (want none), pending step %v (want one)", hasItem(lazy), hasItem(pending))
	}
	st, err := w2.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: lazy})
	if err != nil || st.Status != world.StepStatusRunning || st.Attempt != 1 || st.StepName != "l" || string(st.Input) != `{"in":1}` || st.LeaseExpiresAt.IsZero() {
		t.Fatalf("GetStep of the lazy step: %+v, %v", st, err)
	}
	for _, desc := range []bool{false, true} {
		page, err := w2.ListSteps(ctx, &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Limit: 1, Descending: desc}})
		if err != nil || len(page.Items) != 1 || !page.HasMore {
			t.Fatalf("ListSteps page 1 (desc %v): %+v, %v", desc, page, err)
		}
		page2, err := w2.ListSteps(ctx, &world.ListStepsParams{RunID: run, Pagination: world.Pagination{Limit: 1, Descending: desc, Cursor: page.Cursor}})
		if err != nil || len(page2.Items) != 1 || page2.HasMore || page2.Items[0].StepID == page.Items[0].StepID {
			t.Fatalf("ListSteps page 2 (desc %v): %+v, %v", desc, page2, err)
		}
		if got := []string{page.Items[0].StepID, page2.Items[0].StepID}; (got[0] < got[1]) == desc {
			t.Fatalf("ListSteps order (desc %v): %v", desc, got)
		}
	}
	_, err = w2.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: lazy, Data: &world.StepCreated{StepName: "l"}}}})
	if !errors.Is(err, world.ErrConflict) {
		t.Fatalf("creating the lazy step again: %v, want a conflict", err)
	}
	_, err = w2.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: lazy, Data: &world.StepStarted{}}}})
	var le *world.RefusalError
	if !errors.As(err, &le) || le.Kind != world.ErrConflict || le.Attempt < 1 {
		t.Fatalf("starting the lazy step again: %v, want a refusal of the leased attempt", err)
	}
	if _, err := w2.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: lazy, Attempt: 2}); !errors.Is(err, world.ErrConflict) {
		t.Fatalf("renewing another attempt: %v, want a conflict", err)
	}
	renewed, err := w2.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: lazy, Attempt: 1, TTL: time.Hour})
	if err != nil || !renewed.LeaseExpiresAt.After(st.LeaseExpiresAt) || hasItem(lazy) {
		t.Fatalf("renewing the lazy step: %+v, %v (item %v, want none: a lease record)", renewed, err, hasItem(lazy))
	}
	w3 := newWorld()
	if got, err := w3.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: lazy}); err != nil || !got.LeaseExpiresAt.Equal(renewed.LeaseExpiresAt) {
		t.Fatalf("GetStep of the renewed lazy step by another World: %+v, %v; want the lease %v", got, err, renewed.LeaseExpiresAt)
	}
	// w1 never saw the renewal: the renewed lease stops its takeover.
	if _, err := w1.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: lazy, Data: &world.StepStarted{}}}}); !errors.As(err, &le) || le.Kind != world.ErrConflict {
		t.Fatalf("starting the renewed lazy step again: %v, want a refusal of the leased attempt", err)
	}
	res := mustAppend(t, w1, run, world.EventInput{CorrelationID: lazy, Data: &world.StepCompleted{Result: []byte(`"ok"`)}})
	if s := res.Results[0].Step; s.Status != world.StepStatusCompleted || s.Attempt != 1 || string(s.Input) != `{"in":1}` {
		t.Fatalf("completing the renewed lazy step: %+v", s)
	}
	if hasItem(lazy) {
		t.Fatal("the completed lazy step got an item: it should stay bare")
	}
	got, err := w2.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: lazy})
	if err != nil || got.Status != world.StepStatusCompleted || string(got.Output) != `"ok"` {
		t.Fatalf("GetStep after completion: %+v, %v", got, err)
	}
	// A lazy step whose lease w1 believes expired, renewed by w2: w1's
	// takeover is planned on its cache, and the lease record's condition
	// sends it back to a fresh read, which refuses it.
	short := ids.New(world.PrefixStep)
	mustAppend(t, w1, run, world.EventInput{CorrelationID: short, Data: &world.StepCreated{StepName: "short"}},
		world.EventInput{CorrelationID: short, Data: &world.StepStarted{LeaseTTL: time.Millisecond}})
	time.Sleep(5 * time.Millisecond)
	if _, err := w2.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: short, Attempt: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: short, Data: &world.StepStarted{}}}}); !errors.As(err, &le) || le.Kind != world.ErrConflict {
		t.Fatalf("taking over a lazy step renewed behind the World: %v, want a refusal of the leased attempt", err)
	}
	if hasItem(short) {
		t.Fatal("the refused takeover wrote the step's item")
	}
	mustAppend(t, w1, run, world.EventInput{CorrelationID: short, Data: &world.StepCompleted{Result: []byte(`1`)}})
	// The bare step, to Worlds that never saw it: read from the log.
	w4 := newWorld()
	if _, err := w4.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: lazy, Attempt: 1}); !errors.Is(err, world.ErrConflict) {
		t.Fatalf("renewing the bare step: %v, want a conflict", err)
	}
	if _, err := w4.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: lazy, Data: &world.StepCreated{StepName: "l"}}}}); !errors.Is(err, world.ErrConflict) {
		t.Fatalf("creating the bare step again: %v, want a conflict", err)
	}
	w5 := newWorld()
	if _, err := w5.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: lazy, Data: &world.StepCompleted{Result: []byte(`"again"`)}}}}); !errors.Is(err, world.ErrConflict) {
		t.Fatalf("completing the bare step again: %v, want a conflict", err)
	}
	all, err := w5.ListSteps(ctx, &world.ListStepsParams{RunID: run})
	if err != nil || len(all.Items) != 3 || all.HasMore {
		t.Fatalf("ListSteps with a bare step: %+v, %v", all, err)
	}
	for _, s := range all.Items {
		if s.StepID == lazy && (s.Status != world.StepStatusCompleted || string(s.Output) != `"ok"`) {
			t.Fatalf("the bare step as listed: %+v", s)
		}
	}
	if _, err := w2.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: ids.New(world.PrefixStep)}); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("GetStep of an unknown step: %v", err)
	}
}
