package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// TestHandSetTTLWithoutRetentionIsCorrupt: trial21 set ttl by hand on the
// items of a run with missing items, on a table without Retention, and the
// reads answered world.ErrGone (the run has expired) for damage. Only a
// World with Config.Retention gives runs a ttl: without it, the missing
// items are world.ErrCorrupt whatever ttl says.
func TestHandSetTTLWithoutRetentionIsCorrupt(t *testing.T) {
	f := newGapsFixture(t)
	if f.cfg.Retention != 0 {
		t.Fatalf("the fixture's Retention is %s, want 0", f.cfg.Retention)
	}
	ctx := context.Background()
	run := completedRun(t, f.open(t))
	past := map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)}}
	steps, err := f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run})
	if err != nil || len(steps.Items) != 1 {
		t.Fatalf("ListSteps: %v, %v", steps, err)
	}
	f.deleteItem(t, run, "s#"+steps.Items[0].StepID)
	f.deleteCommit(t, run, 0)
	for _, sk := range []string{"e~", fmt.Sprintf("e#%020d", 5), fmt.Sprintf("e#%020d", 2)} {
		_, err := f.c.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(f.cfg.Table),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "r#" + run},
				"sk": &types.AttributeValueMemberS{Value: sk},
			},
			UpdateExpression: aws.String("SET #t = :t"), ExpressionAttributeNames: map[string]string{"#t": "ttl"},
			ExpressionAttributeValues: past,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, world.ErrCorrupt) || errors.Is(err, world.ErrGone) {
			t.Fatalf("%s: %v, want world.ErrCorrupt, not world.ErrGone", what, err)
		}
	}
	_, err = f.open(t).ListSteps(ctx, &world.ListStepsParams{RunID: run})
	check("ListSteps", err)
	_, err = f.open(t).ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 1, Descending: true}})
	check("descending ListEvents", err)
	f.deleteItem(t, run, "e~")
	_, err = f.open(t).GetRun(ctx, &world.GetRunParams{RunID: run})
	check("GetRun without its head", err)
}
