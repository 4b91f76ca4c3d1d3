package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// restoreDouble and restoreFlow: a step, a hook, the step again.
var (
	restoreDouble = workflow.NewStep("restore-double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })
	restoreFlow   = workflow.New("restore-flow", func(ctx workflow.Context, n int) (int, error) {
		a, err := restoreDouble.Call(ctx, n)
		if err != nil {
			return 0, err
		}
		add, err := workflow.NewHook[int](ctx, workflow.HookOptions{Token: fmt.Sprintf("restore-%d", n)}).Receive(ctx)
		if err != nil {
			return 0, err
		}
		return restoreDouble.Call(ctx, a+add)
	})
)

// TestRestoredRunGoesOn is the recovery RELIABILITY.md documents for a run
// missing a commit item: a running run (waiting on a hook) loses a commit
// item from the middle of its log, and its hook is resumed. The trial's
// `runs cancel` and `runs fail` then wrote at the deleted numbers (no
// fence, no log read), and a delivery that found the hole was dropped with
// nothing to wake the run once restored. Now: the delivery is dropped and
// writes nothing, cancel and fail are world.ErrCorrupt and write nothing,
// so is a delivery past MaxDeliveries; once the item is restored, nothing
// moves until the run is woken as `skein runs retry` does (a checked read
// of its log, then a continuation), and the run completes with the
// history it would have had.
func TestRestoredRunGoesOn(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	reg := workflow.NewRegistry().MustRegister(restoreDouble, restoreFlow)
	client, err := client.New(client.Config{World: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	eng := worker.EngineOptions{MaxDeliveries: 5}
	p, err := worker.NewProcessor(worker.Config{World: f.open(t), Registry: reg, Engine: eng}, knobs.WithLinger(-1))
	if err != nil {
		t.Fatal(err)
	}
	run, err := restoreFlow.Start(ctx, client, 3)
	if err != nil {
		t.Fatal(err)
	}
	runID := run.ID()
	drain(t, w, p) // the start: step 1 runs, the hook is created
	if r, err := w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil || r.Status != world.RunStatusRunning {
		t.Fatalf("run before the damage: %+v, %v", r, err)
	}
	if _, err := client.ResumeHook(ctx, "restore-3", 1); err != nil {
		t.Fatal(err)
	}
	keys := f.commitKeys(t, runID)
	if len(keys) < 3 {
		t.Fatalf("commits %v, want at least 3", keys)
	}
	saved := f.takeItem(t, runID, keys[1]) // from the middle of the log

	// Damaged: every writer refuses, nothing is written.
	if n := drain(t, w, p); n == 0 {
		t.Fatal("no message for the resumed hook")
	}
	if err := client.Cancel(ctx, runID, "by hand"); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("Cancel of the damaged run: %v, want world.ErrCorrupt", err)
	}
	if err := client.FailRun(ctx, runID, "by hand"); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("FailRun of the damaged run: %v, want world.ErrCorrupt", err)
	}
	body, err := world.EncodeMessage(world.Message{RunID: runID, Delivered: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Process(ctx, body, 1); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("a delivery past MaxDeliveries: %v, want world.ErrCorrupt", err)
	}
	if after := f.commitKeys(t, runID); fmt.Sprint(after) != fmt.Sprint(withoutKey(keys, keys[1])) {
		t.Fatalf("the damaged run's commits changed: %v, were %v less %s", after, keys, keys[1])
	}

	// Restored: nothing wakes the run by itself (its messages were
	// dropped); the operator's wake does, and it completes.
	f.putItem(t, saved)
	if n := drain(t, w, p); n != 0 {
		t.Fatalf("%d messages after the restore, want none (the damaged run's were dropped)", n)
	}
	if _, err := engine.CheckedLastSeq(ctx, w, runID); err != nil {
		t.Fatalf("the restored log: %v", err)
	}
	if err := engine.Wake(ctx, w, time.Now, runID, ""); err != nil {
		t.Fatal(err)
	}
	drain(t, w, p)
	var out int
	if err := client.Result(ctx, runID, &out); err != nil || out != 14 {
		t.Fatalf("result %d, %v; want 14 (3 doubled, plus 1, doubled)", out, err)
	}
	evs, err := runrules.AllEvents(ctx, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	var types []world.EventType
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		types = append(types, ev.Type())
	}
	want := []world.EventType{world.EventRunCreated, world.EventRunStarted,
		world.EventStepCreated, world.EventStepStarted, world.EventStepCompleted,
		world.EventHookCreated, world.EventHookReceived,
		world.EventStepCreated, world.EventStepStarted, world.EventStepCompleted,
		world.EventRunCompleted, world.EventRunDeactivated}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("history %v\nwant    %v", types, want)
	}
}

// drain processes the messages on w's queue until none is left, acking
// each (a permanent error is logged and acked, as a consumer does), and
// returns how many it processed.
func drain(t *testing.T, w *dynamoworld.World, p *worker.Processor) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for {
		ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: time.Second, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return n
		}
		for _, d := range ds {
			n++
			if err := p.Process(ctx, d.Body, d.Attempt); err != nil && !sdk.IsPermanent(err) {
				t.Fatalf("message %s: %v", d.Body, err)
			} else if err != nil {
				t.Logf("message %s dropped: %v", d.Body, err)
			}
			if err := w.Ack(ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// takeItem reads and deletes the item keyed sk of runID's partition.
func (f *gapsFixture) takeItem(t *testing.T, runID, sk string) map[string]types.AttributeValue {
	t.Helper()
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "r#" + runID},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
	out, err := f.c.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.cfg.Table), Key: key, ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil || len(out.Attributes) == 0 {
		t.Fatalf("delete %s of run %s: %v (%d attributes)", sk, runID, err, len(out.Attributes))
	}
	return out.Attributes
}

// putItem puts an item back (a restore).
func (f *gapsFixture) putItem(t *testing.T, it map[string]types.AttributeValue) {
	t.Helper()
	if _, err := f.c.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.cfg.Table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

func withoutKey(keys []string, k string) []string {
	var out []string
	for _, x := range keys {
		if x != k {
			out = append(out, x)
		}
	}
	return out
}
