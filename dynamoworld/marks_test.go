package dynamoworld_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// liveRunWithNewestCommit appends a running run whose newest commit
// (keyed 4: events 5-7) completes step s1 and creates and starts s2, as in
// the trial; it returns the run and the two step IDs.
func liveRunWithNewestCommit(t *testing.T, w world.World) (run, s1, s2 string) {
	t.Helper()
	run, s1, s2 = ids.New(world.PrefixRun), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "s", Input: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	return run, s1, s2
}

// stepItem reads a step's item as stored (nil when it has none).
func (f *gapsFixture) stepItem(t *testing.T, runID, stepID string) map[string]types.AttributeValue {
	t.Helper()
	return f.item(t, runID, "s#"+stepID)
}

// item reads the item of a run's partition with sort key sk (nil: none).
func (f *gapsFixture) item(t *testing.T, runID, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.c.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.cfg.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + runID},
			"sk": &types.AttributeValueMemberS{Value: sk},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// editStep applies an update expression to a step's item behind the World,
// as tamper2.py's setattr/delattr did.
func (f *gapsFixture) editStep(t *testing.T, runID, stepID, update string, values map[string]types.AttributeValue) {
	t.Helper()
	f.editItem(t, runID, "s#"+stepID, update, values)
}

// editItem applies an update expression to the item keyed sk of a run's
// partition behind the World.
func (f *gapsFixture) editItem(t *testing.T, runID, sk, update string, values map[string]types.AttributeValue) {
	t.Helper()
	_, err := f.c.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.cfg.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + runID},
			"sk": &types.AttributeValueMemberS{Value: sk},
		},
		UpdateExpression: aws.String(update), ExpressionAttributeValues: values,
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatalf("edit item %s of run %s: %v", sk, runID, err)
	}
}

// TestRunEndOnAShortLog: the trial's `skein runs cancel` and `runs fail`
// (Appends with no IfLastSeq, that read only the run's head and newest
// commit) wrote run_cancelled / run_failed at the numbers of the run's
// deleted newest commit: a run-ending commit touches no step, so nothing
// compared the log with the items its lost commit wrote. A run's end now
// checks every step, wait and hook-link item's mark against the log it
// was judged on, on a fresh read and on a snapshot primed by reading the
// log: world.ErrCorrupt naming the missing range, nothing written.
func TestRunEndOnAShortLog(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run, _, _ := liveRunWithNewestCommit(t, f.open(t))
	f.deleteCommit(t, run, 4) // events 5-7
	before := f.commitKeys(t, run)

	_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "ops"}}}})
	wantGap(t, "cancel on a fresh read", err, f.cfg.Table, run, "events 5-7")

	primed := f.open(t)
	if evs, err := runrules.AllEvents(ctx, primed, run); err != nil || len(evs) != 4 {
		t.Fatalf("the log as it reads: %d events, %v", len(evs), err)
	}
	_, err = primed.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunFailed{Error: &world.ErrorData{Message: "ops"}}}}})
	wantGap(t, "fail on a primed snapshot", err, f.cfg.Table, run, "events 5-7")
	if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the run's commits changed: %v, were %v", after, before)
	}
}

// TestWriteMarkUnderChecksum: the trial lowered `wq` by hand on the step
// item its deleted commit wrote, and the next commit was written at the
// deleted numbers again. The mark is under the item's checksum now: an
// edit that lowers it or removes it is world.ErrCorrupt naming the item
// and the attribute on every read of the item, and nothing is written.
func TestWriteMarkUnderChecksum(t *testing.T) {
	num := func(n int64) *types.AttributeValueMemberN {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	for _, tc := range []struct {
		name, update string
		values       map[string]types.AttributeValue
	}{
		{"lowered", "SET wq = :q", map[string]types.AttributeValue{":q": num(4)}},
		{"removed", "REMOVE wq", nil},
		{"removed with its checksum", "REMOVE wq, kwq", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGapsFixture(t)
			ctx := context.Background()
			run, s1, _ := liveRunWithNewestCommit(t, f.open(t))
			if it := f.stepItem(t, run, s1); it == nil || it["wq"] == nil {
				t.Fatalf("step item %v has no write mark", it)
			}
			f.deleteCommit(t, run, 4) // events 5-7
			f.editStep(t, run, s1, tc.update, tc.values)
			before := f.commitKeys(t, run)

			// The mark edited to fit the shorter log: without its checksum,
			// the run's end would land at the deleted numbers.
			_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{}}}})
			wantGap(t, "cancel", err, f.cfg.Table, run, "wq")
			_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`3`)}}}})
			wantGap(t, "an Append naming the step", err, f.cfg.Table, run, "wq")
			_, err = f.open(t).GetStep(ctx, &world.GetStepParams{RunID: run, StepID: s1})
			wantGap(t, "GetStep", err, f.cfg.Table, run, "s#"+s1)
			if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("the run's commits changed: %v, were %v", after, before)
			}
		})
	}
}

// TestHookLinkMarkUnderChecksum: the trial's hook variant of the lowered
// mark: the commit holding hook_created deleted, the hook link's `wq`
// lowered to fit the shorter log, and ResumeHook wrote hook_received at
// the deleted number for a hook the log never created. The lowered mark
// does not match its checksum: world.ErrCorrupt, nothing written.
func TestHookLinkMarkUnderChecksum(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	run, hook, tok := ids.New(world.PrefixRun), ids.New(world.PrefixHook), "tok-"+ids.New("")
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: tok}})
	f.deleteCommit(t, run, 2) // event 3: hook_created
	f.editItem(t, run, "h#"+hook, "SET wq = :q", map[string]types.AttributeValue{":q": &types.AttributeValueMemberN{Value: "2"}})
	before := f.commitKeys(t, run)

	_, err := engine.ResumeHook(ctx, f.open(t), time.Now, tok, json.RawMessage(`"late"`))
	wantGap(t, "ResumeHook", err, f.cfg.Table, run, "wq")
	if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the run's commits changed: %v, were %v", after, before)
	}
}

// TestRunningStepCarriesItsMark: the trial's running step had an item
// without `wq` (a lease renewal wrote the item of a step its commit
// created and started without one), so when the commit holding its
// step_started was deleted, the step's completion was written at the
// deleted numbers. A renewal of such a step writes its lease record, which
// carries the mark of the log it read: the completion is
// world.ErrCorrupt, nothing written.
func TestRunningStepCarriesItsMark(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	run, s1 := ids.New(world.PrefixRun), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}},
		world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}})
	if it := f.stepItem(t, run, s1); it != nil {
		t.Fatalf("the step has an item before its renewal: %v (the test needs a lazy step)", it)
	}
	if _, err := f.open(t).RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: s1, Attempt: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if it := f.stepItem(t, run, s1); it != nil {
		t.Fatalf("the renewal wrote the step's item: %v", it)
	}
	if it := f.item(t, run, "x#"+s1); it == nil || it["wq"] == nil {
		t.Fatalf("the renewed step's lease record has no write mark: %v", it)
	}
	f.deleteCommit(t, run, 2) // events 3-4: step_created, step_started
	before := f.commitKeys(t, run)

	_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`2`)}}}})
	wantGap(t, "step_completed", err, f.cfg.Table, run, "events 3-4")
	if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the run's commits changed: %v, were %v", after, before)
	}
}

// TestRunEndReadCost measures what the run's end pays for reading its
// entities' marks (runEndItems): runs of 1, 100 and 1,000 completed steps
// ended by a cold World (a Client.Cancel). It logs the requests of the
// ending Append and the read units of its entity Query: strongly
// consistent, 1 unit per 4 KB of the items it reads, which DynamoDB sizes
// whole whatever the projection. RELIABILITY.md (Missing items) quotes it.
func TestRunEndReadCost(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	for _, n := range []int{1, 100, 1000} {
		w := f.open(t)
		run := ids.New(world.PrefixRun)
		mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`{"n":1}`)}}, world.EventInput{Data: &world.RunStarted{}})
		for lo := 0; lo < n; lo += 45 {
			var start, done []world.EventInput
			for i := lo; i < min(n, lo+45); i++ {
				id := ids.New(world.PrefixStep)
				in := []byte(fmt.Sprintf(`{"item":%d}`, i))
				start = append(start, world.EventInput{CorrelationID: id, Data: &world.StepCreated{StepName: "square", Input: in}},
					world.EventInput{CorrelationID: id, Data: &world.StepStarted{}})
				done = append(done, world.EventInput{CorrelationID: id, Data: &world.StepCompleted{Result: []byte(fmt.Sprintf(`{"square":%d}`, i*i))}})
			}
			mustAppend(t, w, run, start...)
			mustAppend(t, w, run, done...)
		}
		sizes := dynamotest.StoredSizes(t, f.c, f.cfg.Table, run)
		var entityBytes, entities int
		for k, size := range sizes {
			if sk := k[strings.LastIndex(k, "/")+1:]; sk >= "h#" && sk <= "w$" {
				entityBytes += size
				entities++
			}
		}
		m := &dynamotest.Meter{}
		c := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
		cfg := f.cfg
		cfg.DynamoDB, cfg.SQS, cfg.S3 = c.DynamoDB, c.SQS, c.S3
		cold, err := dynamoworld.New(ctx, cfg, knobs.WithSkipCheck())
		if err != nil {
			t.Fatal(err)
		}
		m.Reset()
		mustAppend(t, cold, run, world.EventInput{Data: &world.RunCancelled{Reason: "measured"}})
		cold.Close()
		// A page holds 1 MB; each is priced on its own.
		units := (entityBytes + 4095) / 4096
		t.Logf("%d steps: ending Append: %d DynamoDB requests (%s); the entity Query reads %d items, %d bytes: %d read units (strongly consistent), %d page(s)",
			n, m.Count("DynamoDB"), m.Summary(), entities, entityBytes, units, entityBytes/(1<<20)+1)
		if q := m.Count("DynamoDB/Query"); q != 2 {
			t.Errorf("%d steps: %d Queries to end the run cold, want 2 (the run, its entities)", n, q)
		}
	}
}
