package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/world"
)

func mustAppend(t *testing.T, w world.World, runID string, evs ...world.EventInput) *world.AppendResult {
	t.Helper()
	res, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

func startedRun(t *testing.T, w world.World) string {
	t.Helper()
	id := ids.New(world.PrefixRun)
	mustAppend(t, w, id, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	return id
}

// TestLongDelayHops: a world.Message received before its NotBefore is sent
// on for the time left and delivered once it is due, with the same
// MessageID.
func TestLongDelayHops(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	ctx := context.Background()
	due := time.Now().Add(2 * time.Second)
	// The run must be live: the wake-up of a finished or unknown run is
	// dropped (TestLongDelayOfEndedRunIsDropped).
	body, _ := world.EncodeMessage(world.Message{RunID: startedRun(t, w), NotBefore: due})
	e, err := w.Enqueue(ctx, &world.EnqueueParams{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second})
	if err != nil || len(ds) != 0 {
		t.Fatalf("a message not yet due was delivered: %v, %v", ds, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			continue
		}
		m, err := world.DecodeMessage(ds[0].Body)
		if err != nil || ds[0].MessageID != e.MessageID || m.Hop != 1 || time.Now().Before(due) {
			t.Fatalf("after the hop: %+v (hop %d), %v; want message %s, hop 1, not before %v", ds[0], m.Hop, err, e.MessageID, due)
		}
		return
	}
	t.Fatal("the hopped message never arrived")
}

// sendCounter counts SendMessage calls.
type sendCounter struct {
	dynamoworld.SQSAPI
	sends atomic.Int64
}

func (s *sendCounter) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.sends.Add(1)
	return s.SQSAPI.SendMessage(ctx, in, o...)
}

// TestLongDelayOfEndedRunIsDropped: a world.Message received before its
// NotBefore for a run that has ended, or that does not exist, is deleted
// instead of hopping again; a live run's hops.
func TestLongDelayOfEndedRunIsDropped(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	q := &sendCounter{SQSAPI: c.SQS}
	cfg := dynamotest.Config(c, r, url)
	cfg.SQS = q
	w, err := dynamoworld.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	ended := func(d world.EventData) string {
		id := startedRun(t, w)
		mustAppend(t, w, id, world.EventInput{Data: d})
		return id
	}
	for _, tc := range []struct {
		name string
		run  string
		hops bool
	}{
		{"live run", startedRun(t, w), true},
		{"unknown run", ids.New(world.PrefixRun), false},
		{"completed run", ended(&world.RunCompleted{}), false},
		{"cancelled run", ended(&world.RunCancelled{}), false},
		{"failed run", ended(&world.RunFailed{Error: &world.ErrorData{Message: "x"}}), false},
	} {
		body, _ := world.EncodeMessage(world.Message{RunID: tc.run, NotBefore: time.Now().Add(time.Hour)})
		if _, err := w.Enqueue(ctx, &world.EnqueueParams{Body: body}); err != nil {
			t.Fatal(err)
		}
		before := q.sends.Load()
		ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second})
		if err != nil || len(ds) != 0 {
			t.Fatalf("%s: a message not yet due was delivered: %v, %v", tc.name, ds, err)
		}
		if hopped := q.sends.Load() > before; hopped != tc.hops {
			t.Errorf("%s: hopped %v, want %v", tc.name, hopped, tc.hops)
		}
	}
}

// TestRunEndBeyondOneTransaction: a run ending with more hooks and waits
// than one transaction can delete (3 items a hook) deletes them all, the
// rest right after the terminal commit; every token is free again.
func TestRunEndBeyondOneTransaction(t *testing.T) {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	ctx := context.Background()
	a, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	run := startedRun(t, a)
	var tokens []string
	for range 8 {
		var evs []world.EventInput
		for range 6 {
			tok := "tok-" + ids.New("")
			tokens = append(tokens, tok)
			evs = append(evs, world.EventInput{CorrelationID: ids.New(world.PrefixHook), Data: &world.HookCreated{Token: tok}})
		}
		evs = append(evs, world.EventInput{CorrelationID: ids.New(world.PrefixWait), Data: &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}})
		mustAppend(t, a, run, evs...)
	}
	// Another World, which has not seen the run, ends it: it finds the
	// 48 hooks and 8 waits by querying (152 deletions).
	b, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustAppend(t, b, run, world.EventInput{Data: &world.RunCompleted{}})
	hooks, err := b.ListHooks(ctx, &world.ListHooksParams{RunID: run})
	if err != nil || len(hooks.Items) != 0 {
		t.Fatalf("after the run ended: %d hooks, %v", len(hooks.Items), err)
	}
	other := startedRun(t, b)
	for _, tok := range tokens {
		if _, err := b.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: tok}); !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("token %s after the run ended: %v", tok, err)
		}
		res := mustAppend(t, a, other, world.EventInput{CorrelationID: ids.New(world.PrefixHook), Data: &world.HookCreated{Token: tok}})
		if res.Results[0].Event.Type() != world.EventHookCreated {
			t.Fatalf("token %s is not free after the run ended", tok)
		}
	}
}

// TestRetention: with Config.Retention every item of an ended run gets a
// TTL attribute (the run's own items in the terminal commit, the others in
// the sweep after it).
func TestRetention(t *testing.T) {
	w := dynamotest.NewWorld(t, dynamotest.Options{Config: dynamoworld.Config{Retention: time.Hour}})
	defer w.Close()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	run := ids.New(world.PrefixRun)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "idem-" + run}}, world.EventInput{Data: &world.RunStarted{}})
	for i := range 5 {
		s := ids.New(world.PrefixStep)
		mustAppend(t, w, run, world.EventInput{CorrelationID: s, Data: &world.StepCreated{StepName: fmt.Sprint(i)}}, world.EventInput{CorrelationID: s, Data: &world.StepStarted{}},
			world.EventInput{CorrelationID: s, Data: &world.StepCompleted{}})
	}
	if _, err := w.AcquireRunLease(context.Background(), &world.RunLeaseParams{RunID: run, Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCompleted{}})
	out, err := c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(tableOf(t, w)),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "r#" + run}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil || len(out.Items) < 10 {
		t.Fatalf("the run's items: %d, %v", len(out.Items), err)
	}
	for _, it := range out.Items {
		n, ok := it["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("item %v has no ttl", it["sk"])
		}
		var ttl int64
		fmt.Sscan(n.Value, &ttl)
		if want := before.Add(time.Hour).Unix(); ttl < want-5 || ttl > want+5 {
			t.Fatalf("item %v: ttl %d, want about %d", it["sk"], ttl, want)
		}
	}
}

func tableOf(t *testing.T, w *dynamoworld.World) string {
	t.Helper()
	return w.Config().Table
}
