package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// runsByAttribute lists the IDs ListRuns returns for key=value, newest
// first, all pages.
func runsByAttribute(t *testing.T, w world.World, key, value string) ([]string, error) {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		p, err := w.ListRuns(context.Background(), &world.ListRunsParams{Attribute: &world.AttributeFilter{Key: key, Value: value},
			Pagination: world.Pagination{Limit: 2, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		for _, r := range p.Items {
			ids = append(ids, r.RunID)
		}
		if !p.HasMore {
			return ids, nil
		}
		cursor = p.Cursor
	}
}

// queryIndex returns the run partitions gs4 lists under key=value.
func queryIndex(t *testing.T, c *dynamodb.Client, table, key, value string) []string {
	t.Helper()
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String("gs4"),
		KeyConditionExpression:    aws.String("g4 = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "at#" + key + "=" + value}},
		ScanIndexForward:          aws.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	var pks []string
	for _, it := range out.Items {
		pks = append(pks, it["pk"].(*types.AttributeValueMemberS).Value)
	}
	return pks
}

// TestListRunsByAttributeIndex: every attribute has an item in gs4, moved
// when its value changes, and ListRuns by attribute reads the index (a
// Query, never a Scan).
func TestListRunsByAttributeIndex(t *testing.T) {
	meter := &dynamotest.Meter{}
	w := dynamotest.NewWorld(t, dynamotest.Options{APIOptions: []func(*middleware.Stack) error{meter.Add}})
	defer w.Close()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	table := tableOf(t, w)
	a, b, z := ids.New(world.PrefixRun), ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	mustAppend(t, w, a, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"tenant": "acme", "tier": "gold"}}})
	mustAppend(t, w, b, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, b, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"tenant": "acme"}}})
	mustAppend(t, w, z, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"tenant": "acme"}}})
	mustAppend(t, w, z, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"tenant": "other"}}})

	if got, want := queryIndex(t, c.DynamoDB, table, "tenant", "acme"), []string{"r#" + b, "r#" + a}; !slices.Equal(got, want) {
		t.Fatalf("gs4 tenant=acme holds %v, want %v (the moved run's old value gone)", got, want)
	}
	if got := queryIndex(t, c.DynamoDB, table, "tenant", "other"); !slices.Equal(got, []string{"r#" + z}) {
		t.Fatalf("gs4 tenant=other holds %v", got)
	}
	meter.Reset()
	got, err := runsByAttribute(t, w, "tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{b, a}; !slices.Equal(got, want) {
		t.Fatalf("ListRuns(tenant=acme) = %v, want %v", got, want)
	}
	if meter.Count("DynamoDB/Scan") != 0 || meter.Count("DynamoDB/Query") == 0 {
		t.Fatalf("ListRuns by attribute: %s; want Queries and no Scan", meter.Summary())
	}
}

// TestListRunsByAttributeWithoutIndex: a table made before gs4 existed
// keeps working, and listing by attribute on it says what to deploy.
func TestListRunsByAttributeWithoutIndex(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	table := tableOf(t, w)
	ctx := context.Background()
	if _, err := c.DynamoDB.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("gs4")}}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool { return aws.ToString(g.IndexName) == "gs4" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("gs4 still there")
		}
		time.Sleep(100 * time.Millisecond)
	}
	run := ids.New(world.PrefixRun)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"tenant": "acme"}}})
	mustAppend(t, w, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"stage": "one"}}})
	r, err := w.GetRun(ctx, &world.GetRunParams{RunID: run})
	if err != nil || r.Attributes["stage"] != "one" || r.Attributes["tenant"] != "acme" {
		t.Fatalf("GetRun on a table without gs4: %+v, %v", r, err)
	}
	if p, err := w.ListRuns(ctx, &world.ListRunsParams{WorkflowName: "wf"}); err != nil || len(p.Items) != 1 {
		t.Fatalf("ListRuns by workflow on a table without gs4: %+v, %v", p, err)
	}
	_, err = runsByAttribute(t, w, "tenant", "acme")
	var mi *dynamoworld.SchemaError
	if !errors.As(err, &mi) || mi.Index != "gs4" || mi.Table != table || !strings.Contains(err.Error(), "template.yaml") {
		t.Fatalf("ListRuns by attribute without gs4 = %v, want a *SchemaError naming gs4 and what to deploy", err)
	}
}

// TestRetentionCoversAttributes: the attribute items of an ended run get
// its ttl, those set after the end included.
func TestRetentionCoversAttributes(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{Config: dynamoworld.Config{Retention: time.Hour}})
	defer w.Close()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	run := ids.New(world.PrefixRun)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Attributes: map[string]string{"a": "1"}}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"b": "2"}}})
	before := time.Now()
	mustAppend(t, w, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"c": "3"}}}, world.EventInput{Data: &world.RunCompleted{}})
	mustAppend(t, w, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"d": "4"}}})
	out, err := c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName:              aws.String(tableOf(t, w)),
		KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :a)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: "r#" + run}, ":a": &types.AttributeValueMemberS{Value: "a#"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(out.Items) != 4 {
		t.Fatalf("the run's attribute items: %d, %v; want 4", len(out.Items), err)
	}
	for _, it := range out.Items {
		n, ok := it["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("attribute item %v has no ttl", it["sk"])
		}
		var ttl int64
		fmt.Sscan(n.Value, &ttl)
		if want := before.Add(time.Hour).Unix(); ttl < want-5 || ttl > want+60 {
			t.Fatalf("attribute item %v: ttl %d, want about %d", it["sk"], ttl, want)
		}
	}
}

// TestWorkflowAttributesOnDynamoDB: a workflow sets attributes mid-run, a
// client sets another, and ListRuns finds the run by each, through gs4;
// each attribute_set is recorded once.
func TestWorkflowAttributesOnDynamoDB(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	token := "attrs-" + fmt.Sprint(time.Now().UnixNano())
	wf := workflow.New("attrs-wf", func(ctx workflow.Context, tenant string) (string, error) {
		if err := workflow.SetAttributes(ctx, map[string]string{"tenant": tenant, "stage": "waiting"}); err != nil {
			return "", err
		}
		p, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: token}).Receive(ctx)
		if err != nil {
			return "", err
		}
		return p, workflow.SetAttributes(ctx, map[string]string{"stage": "done"})
	})
	reg := workflow.NewRegistry().MustRegister(wf)
	wk, err := worker.New(worker.Config{World: w, Registry: reg, Concurrency: 2}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- wk.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	c := wk.Client()
	run, err := wf.Start(ctx, c, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := c.GetHookByToken(ctx, token); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no hook")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.SetAttributes(ctx, run.ID(), map[string]string{"reviewer": "ann"}); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"tenant", "acme"}, {"stage", "waiting"}, {"reviewer", "ann"}} {
		if got, err := runsByAttribute(t, w, kv[0], kv[1]); err != nil || !slices.Equal(got, []string{run.ID()}) {
			t.Fatalf("ListRuns(%s=%s) = %v, %v", kv[0], kv[1], got, err)
		}
	}
	if _, err := c.ResumeHook(ctx, token, "ok"); err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "ok" {
		t.Fatalf("result %q, %v", got, err)
	}
	if got, err := runsByAttribute(t, w, "stage", "waiting"); err != nil || len(got) != 0 {
		t.Fatalf("ListRuns(stage=waiting) after the end = %v, %v", got, err)
	}
	if got, err := runsByAttribute(t, w, "stage", "done"); err != nil || !slices.Equal(got, []string{run.ID()}) {
		t.Fatalf("ListRuns(stage=done) = %v, %v", got, err)
	}
	page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run.ID(), Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Items {
		if e.Type() == world.EventAttributeSet {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d attribute_set events, want 3 (two by the code, one by the client)", n)
	}
}
