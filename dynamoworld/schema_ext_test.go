package dynamoworld_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestTableSchemaVersion: CreateTable records the table's schema version,
// and New refuses a table that holds runs without one (as a World from
// before the version left it) with a *dynamoworld.SchemaError.
func TestTableSchemaVersion(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "skein"}, "sk": &types.AttributeValueMemberS{Value: "schema"}}
	got, err := c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.Table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Item["v"].(*types.AttributeValueMemberN); !ok || v.Value != strconv.Itoa(dynamoworld.SchemaVersion) {
		t.Fatalf("the schema item after CreateTable: %v, want version %d", got.Item, dynamoworld.SchemaVersion)
	}
	w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	startedRun(t, w)
	w.Close()
	if _, err := c.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.Table), Key: key}); err != nil {
		t.Fatal(err)
	}
	_, err = dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	var se *dynamoworld.SchemaError
	if !errors.As(err, &se) || se.Found != 0 || se.Want != dynamoworld.SchemaVersion || se.Table != r.Table {
		t.Fatalf("New on a table of runs without a schema version: %v, want a SchemaError", err)
	}
}

// TestTableSchemaMoves: a table of version 1 (no bare steps, no lease
// records) is moved to this World's version by New, in place, and its runs
// go on; a table of a version this World does not know is refused.
func TestTableSchemaMoves(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "skein"}, "sk": &types.AttributeValueMemberS{Value: "schema"}}
	setVersion := func(v string) {
		t.Helper()
		_, err := c.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.Table), Item: map[string]types.AttributeValue{
			"pk": key["pk"], "sk": key["sk"], "v": &types.AttributeValueMemberN{Value: v},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	run := startedRun(t, w)
	w.Close()
	setVersion("1")
	// The run's head as a version 1 World wrote it: unsharded index keys.
	_, err = c.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(r.Table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#" + run}, "sk": &types.AttributeValueMemberS{Value: "e~"}},
		UpdateExpression: aws.String("SET g1 = :a, g2 = :b, g3 = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":a": &types.AttributeValueMemberS{Value: "run"}, ":b": &types.AttributeValueMemberS{Value: "wf#wf"}, ":c": &types.AttributeValueMemberS{Value: "st#running"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	w, err = dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatalf("New on a version 1 table: %v", err)
	}
	defer w.Close()
	if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: run}); err != nil {
		t.Fatalf("a run of the version 1 table: %v", err)
	}
	newer := startedRun(t, w)
	// A World that skips the check (a Lambda function's) does not know the
	// table was moved: it reads the unsharded keys too.
	unchecked, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url), knobs.WithSkipCheck())
	if err != nil {
		t.Fatal(err)
	}
	defer unchecked.Close()
	for _, lw := range []*dynamoworld.World{w, unchecked} {
		for _, p := range []world.ListRunsParams{{}, {WorkflowName: "wf"}, {Status: world.RunStatusRunning}, {WorkflowName: "wf", Status: world.RunStatusRunning}} {
			page, err := lw.ListRuns(ctx, &p)
			if err != nil || len(page.Items) != 2 || page.Items[0].RunID != newer || page.Items[1].RunID != run {
				t.Fatalf("ListRuns %+v on the moved table: %+v, %v; want %s, then the version 1 run %s", p, page, err, newer, run)
			}
		}
	}
	got, err := c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.Table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Item["v"].(*types.AttributeValueMemberN); !ok || v.Value != strconv.Itoa(dynamoworld.SchemaVersion) {
		t.Fatalf("the schema item after New on version 1: %v, want version %d", got.Item, dynamoworld.SchemaVersion)
	}
	setVersion("99")
	_, err = dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	var se *dynamoworld.SchemaError
	if !errors.As(err, &se) || se.Found != 99 || se.Want != dynamoworld.SchemaVersion {
		t.Fatalf("New on a table of version 99: %v, want a SchemaError", err)
	}
}
