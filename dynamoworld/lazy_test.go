package dynamoworld_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

// TestLazyStep: a step created and started in one commit by the World that
// created the run has no item; another World reads it (GetStep, ListSteps),
// refuses its creation again, renews its lease (which writes its item), and
// the first World, whose snapshot still has it without an item, completes it
// after a fresh read.
func TestLazyStep(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
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
	w1, w2 := ws[0], ws[1]
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
	if err != nil || !renewed.LeaseExpiresAt.After(st.LeaseExpiresAt) || !hasItem(lazy) {
		t.Fatalf("renewing the lazy step: %+v, %v (item %v)", renewed, err, hasItem(lazy))
	}
	res := mustAppend(t, w1, run, world.EventInput{CorrelationID: lazy, Data: &world.StepCompleted{Result: []byte(`"ok"`)}})
	if s := res.Results[0].Step; s.Status != world.StepStatusCompleted || s.Attempt != 1 || string(s.Input) != `{"in":1}` {
		t.Fatalf("completing the renewed lazy step: %+v", s)
	}
	got, err := w2.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: lazy})
	if err != nil || got.Status != world.StepStatusCompleted || string(got.Output) != `"ok"` {
		t.Fatalf("GetStep after completion: %+v, %v", got, err)
	}
	if _, err := w2.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: ids.New(world.PrefixStep)}); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("GetStep of an unknown step: %v", err)
	}
}
