package dynamoworld_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// gapsFixture is a table on the emulators and a way to open fresh Worlds
// on it (no cache shared with the writer) and delete commit items behind
// them, as tamper.py of the trial did.
type gapsFixture struct {
	c   dynamoworld.Clients
	cfg dynamoworld.Config
}

func newGapsFixture(t *testing.T) *gapsFixture {
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	return &gapsFixture{c: c, cfg: dynamotest.Config(c, r, url)}
}

func (f *gapsFixture) open(t *testing.T) *dynamoworld.World {
	t.Helper()
	w, err := dynamoworld.New(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// deleteCommit deletes the commit item keyed prev (events prev+1 on).
func (f *gapsFixture) deleteCommit(t *testing.T, runID string, prev int64) {
	t.Helper()
	_, err := f.c.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.cfg.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + runID},
			"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("e#%020d", prev)},
		},
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatalf("delete commit %d of run %s: %v", prev, runID, err)
	}
}

// completedRun appends a completed run in five commits, keyed 0, 2, 3, 4
// and 5: run_created and run_started (events 1-2), a step's created (3),
// started (4) and completed (5), and run_completed (6).
func completedRun(t *testing.T, w world.World) string {
	t.Helper()
	run := ids.New(world.PrefixRun)
	step := ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCompleted{Result: []byte(`2`)}})
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`3`)}})
	return run
}

// wantGap checks err is world.ErrCorrupt naming the table, the run and
// the range.
func wantGap(t *testing.T, what string, err error, table, run, rng string) {
	t.Helper()
	if !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("%s: got %v, want world.ErrCorrupt", what, err)
	}
	for _, s := range []string{table, run, rng} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %q does not name %q", what, err, s)
		}
	}
}

// listAll reads a run's log page by page (limit per page), ascending or
// descending.
func listPaged(ctx context.Context, w world.World, run string, limit int, desc bool) ([]world.Event, error) {
	var out []world.Event
	cursor := ""
	for {
		p, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: limit, Cursor: cursor, Descending: desc}})
		if err != nil {
			return out, err
		}
		out = append(out, p.Items...)
		if !p.HasMore {
			return out, nil
		}
		cursor = p.Cursor
	}
}

// TestMissingMiddleCommit: a commit item deleted from the middle of a
// completed run's log (the trial's del_commit) made ListEvents return the
// log without its events, with no error. Every read of the log, from the
// start or a cursor, either way, in one page or several, is now
// world.ErrCorrupt naming the table, run and missing range.
func TestMissingMiddleCommit(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run := completedRun(t, f.open(t))
	f.deleteCommit(t, run, 3) // the step's step_started: event 4
	for _, limit := range []int{1, 2, 100} {
		for _, desc := range []bool{false, true} {
			evs, err := listPaged(ctx, f.open(t), run, limit, desc)
			wantGap(t, fmt.Sprintf("ListEvents limit %d desc %v (read %d events)", limit, desc, len(evs)), err, f.cfg.Table, run, "events 4-4")
		}
	}
	if _, err := runrules.AllEvents(ctx, f.open(t), run); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("AllEvents: %v, want world.ErrCorrupt", err)
	}
	// A read past the hole from a cursor after it has no hole to see.
	w := f.open(t)
	first, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 1, Descending: true}})
	if err != nil || len(first.Items) != 1 || first.Items[0].Seq != 6 {
		t.Fatalf("the newest event: %v, %v", first, err)
	}
}

// TestMissingLastCommit: the commit item holding run_completed deleted
// (the trial's del_last_commit) made GetRun say running while the head
// said completed, and the log read as complete and shorter. GetRun,
// ListEvents and an Append are now world.ErrCorrupt, and nothing is
// written at the missing sequence numbers.
func TestMissingLastCommit(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run := completedRun(t, f.open(t))
	f.deleteCommit(t, run, 5) // run_completed: event 6
	w := f.open(t)
	_, err := w.GetRun(ctx, &world.GetRunParams{RunID: run})
	wantGap(t, "GetRun", err, f.cfg.Table, run, "from 6 on")
	for _, desc := range []bool{false, true} {
		for _, limit := range []int{2, 100} {
			_, err := listPaged(ctx, f.open(t), run, limit, desc)
			wantGap(t, fmt.Sprintf("ListEvents limit %d desc %v", limit, desc), err, f.cfg.Table, run, "from 6 on")
		}
	}
	_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunFailed{Error: &world.ErrorData{Message: "x"}}}}})
	wantGap(t, "Append", err, f.cfg.Table, run, "from 6 on")
	// The listings read the head and the newest commit apart: they said
	// running (the commit) of a run its head and index say completed. (An
	// attacker's trial of session 15.)
	for _, p := range []world.ListRunsParams{{}, {Status: world.RunStatusCompleted}, {WorkflowName: "wf"}} {
		_, err = f.open(t).ListRuns(ctx, &p)
		wantGap(t, fmt.Sprintf("ListRuns %+v", p), err, f.cfg.Table, run, "from 6 on")
	}
	got, err := f.c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.cfg.Table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "r#" + run},
		"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("e#%020d", 5)},
	}})
	if err != nil || len(got.Item) != 0 {
		t.Fatalf("a commit was written over the missing one: %v, %v", got.Item, err)
	}
}

// TestTokenIndexNamesAnotherHook: the trial edited token A's index item
// (t#<sha256(A)>) to name run B's hook, and ResumeHook(A) recorded the
// payload in run B. The hook_received now carries the token it was found
// by, the commit's load reads the hook it names (no extra request), and a
// hook holding another token refuses it with world.ErrCorrupt: nothing is
// recorded in either run.
func TestTokenIndexNamesAnotherHook(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	hooked := func(tok string) (run, hook string) {
		run, hook = ids.New(world.PrefixRun), ids.New(world.PrefixHook)
		mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}},
			world.EventInput{CorrelationID: hook, Data: &world.HookCreated{Token: tok}})
		return run, hook
	}
	tokA, tokB := "tok-a-"+ids.New(""), "tok-b-"+ids.New("")
	runA, _ := hooked(tokA)
	runB, hookB := hooked(tokB)
	sum := sha256.Sum256([]byte(tokA))
	_, err := f.c.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(f.cfg.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "t#" + hex.EncodeToString(sum[:])},
			"sk": &types.AttributeValueMemberS{Value: "tok"},
		},
		UpdateExpression:          aws.String("SET #r = :r, #h = :h"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#r": "run", "#h": "hid"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: runB}, ":h": &types.AttributeValueMemberS{Value: hookB}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cached := range []bool{true, false} {
		rw := w // the writer: its cache holds both runs
		if !cached {
			rw = f.open(t)
		}
		_, err = engine.ResumeHook(ctx, rw, time.Now, tokA, json.RawMessage(`"attacker"`))
		if !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("ResumeHook(A) through an index naming B's hook (cached %v): %v, want world.ErrCorrupt", cached, err)
		}
	}
	for _, run := range []string{runA, runB} {
		evs, err := runrules.AllEvents(ctx, f.open(t), run)
		if err != nil || len(evs) != 3 {
			t.Fatalf("run %s: %d events (%v), want its 3: nothing recorded", run, len(evs), err)
		}
	}
	if _, err := engine.ResumeHook(ctx, f.open(t), time.Now, tokB, json.RawMessage(`"ok"`)); err != nil {
		t.Fatalf("ResumeHook(B), whose index is intact: %v", err)
	}
}

// noRegistry knows no workflow: the delivery must stop before it asks.
type noRegistry struct{}

func (noRegistry) Workflow(string) (*engine.Workflow, bool) { return nil, false }
func (noRegistry) Step(string) (*engine.Step, bool)         { return nil, false }

// commitKeys lists the sort keys of a run's commit items.
func (f *gapsFixture) commitKeys(t *testing.T, runID string) []string {
	t.Helper()
	out, err := f.c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(f.cfg.Table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :e)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "r#" + runID}, ":e": &types.AttributeValueMemberS{Value: "e#"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range out.Items {
		keys = append(keys, it["sk"].(*types.AttributeValueMemberS).Value)
	}
	return keys
}

// TestMissingCommitOfRunningRun: the trial deleted a commit item of a
// running run and started a worker, which retried for 48 deliveries and
// then failed the run with events written where the deleted ones had
// been. The worker's delivery now reads the log, finds the hole
// (world.ErrCorrupt naming it) and drops its message (a
// *engine.PermanentError) without writing anything.
func TestMissingCommitOfRunningRun(t *testing.T) {
	f := newGapsFixture(t)
	w := f.open(t)
	run, s1, s2 := ids.New(world.PrefixRun), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "s", Input: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	f.deleteCommit(t, run, 3) // step 1's step_started: event 4
	before := f.commitKeys(t, run)

	f.deliverOnHole(t, run, "events 4-4", before)
}

// deliverOnHole runs the engine's delivery of run on a fresh World: it
// must be dropped (a *engine.PermanentError) for the hole rng names, and
// leave the run's commits as they were (before).
func (f *gapsFixture) deliverOnHole(t *testing.T, run, rng string, before []string) {
	t.Helper()
	eng, err := engine.New(engine.Config{World: f.open(t), Registry: noRegistry{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	err = eng.HandleDelivery(context.Background(), world.Message{RunID: run}, 1)
	if !engine.IsPermanent(err) {
		t.Fatalf("delivery: %v, want a *engine.PermanentError", err)
	}
	wantGap(t, "delivery", err, f.cfg.Table, run, rng)
	if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the run's commits changed: %v, were %v", after, before)
	}
}

// TestMissingNewestCommitOfLiveRun: the trial's running run lost its
// newest commit (step 1's step_completed, step 2's created and started):
// its log read dense and shorter, and the next commit was written at the
// deleted numbers. The step items that commit wrote carry its last
// sequence number: a commit judged on the shorter log, from a fresh read
// or a snapshot primed by reading the log, is refused with world.ErrCorrupt
// naming the missing range, and nothing is written.
func TestMissingNewestCommitOfLiveRun(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	w := f.open(t)
	run, s1, s2 := ids.New(world.PrefixRun), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "s", Input: []byte(`1`)}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}})
	mustAppend(t, w, run, world.EventInput{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "s", Input: []byte(`2`)}},
		world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	f.deleteCommit(t, run, 4) // events 5-7
	before := f.commitKeys(t, run)
	next := []world.EventInput{{CorrelationID: s1, Data: &world.StepCompleted{Result: []byte(`3`)}}}

	_, err := f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: next})
	wantGap(t, "Append on a fresh read", err, f.cfg.Table, run, "events 5-7")

	primed := f.open(t)
	evs, err := runrules.AllEvents(ctx, primed, run)
	if err != nil || len(evs) != 4 {
		t.Fatalf("the log as it reads: %d events, %v", len(evs), err)
	}
	_, err = primed.Append(ctx, &world.AppendParams{RunID: run, Events: next})
	wantGap(t, "Append on a primed snapshot", err, f.cfg.Table, run, "events 5-7")
	_, err = primed.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: s1, Data: &world.StepStarted{}}}})
	wantGap(t, "step_started again", err, f.cfg.Table, run, "events 5-7")
	if after := f.commitKeys(t, run); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the run's commits changed: %v, were %v", after, before)
	}
}

// TestWatchStopsAtAHole: a watch of a run whose log lost a commit item
// waited at the hole for ever (each look found later commits that did not
// chain, taken for a commit not yet visible). A strongly consistent read
// of the missing key now tells the two apart: world.ErrCorrupt.
func TestWatchStopsAtAHole(t *testing.T) {
	f := newGapsFixture(t)
	run := completedRun(t, f.open(t))
	f.deleteCommit(t, run, 3) // event 4
	// Generous: the watch answers at its first looks; the deadline only
	// turns a hang into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seqs []int64
	var err error
	for e, werr := range f.open(t).Watch(ctx, &world.WatchParams{RunID: run}) {
		if werr != nil {
			err = werr
			break
		}
		seqs = append(seqs, e.Event.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3]" {
		t.Errorf("delivered %v, want the events before the hole", seqs)
	}
	wantGap(t, "Watch", err, f.cfg.Table, run, "events 4-4")
}

// TestMissingRunBody: the trial deleted a completed run's body item (e~b);
// GetRun said completed with no input or output, Result returned nothing
// without an error, and a rerun started with input null. A run created with
// checksums always has its body, so its absence is world.ErrCorrupt, on
// GetRun and on ListRuns.
func TestMissingRunBody(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run := completedRun(t, f.open(t))
	_, err := f.c.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(f.cfg.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "r#" + run},
			"sk": &types.AttributeValueMemberS{Value: "e~b"},
		},
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := f.open(t)
	if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: run}); !errors.Is(err, world.ErrCorrupt) || !strings.Contains(err.Error(), "body") {
		t.Fatalf("GetRun of a run without its body: %v, want world.ErrCorrupt naming the body", err)
	}
	if _, err := w.ListRuns(ctx, &world.ListRunsParams{}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("ListRuns over a run without its body: %v, want world.ErrCorrupt", err)
	}
}
