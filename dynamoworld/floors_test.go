package dynamoworld_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// leasedSerialRun appends, under owner's run lease, a run of n serial steps as
// the engine writes them (step k's completion and step k+1's creation in
// one commit, so every step is lazy, then bare: no commit writes an
// entity item), and releases the lease. It returns the run ID and the
// last sequence number.
func leasedSerialRun(t *testing.T, w world.World, owner string, n int) (string, int64) {
	t.Helper()
	ctx := context.Background()
	run := ids.New(world.PrefixRun)
	lease := &world.RunLeaseParams{RunID: run, Owner: owner}
	if _, err := w.AcquireRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	step := ids.New(world.PrefixStep)
	res := mustAppend(t, w, run, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: []byte(`1`)}}, world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: []byte(`0`)}}, world.EventInput{CorrelationID: step, Data: &world.StepStarted{}})
	for i := 1; i < n; i++ {
		next := ids.New(world.PrefixStep)
		res = mustAppend(t, w, run, world.EventInput{CorrelationID: step, Data: &world.StepCompleted{Result: []byte(`2`)}},
			world.EventInput{CorrelationID: next, Data: &world.StepCreated{StepName: "s", Input: []byte(fmt.Sprint(i))}},
			world.EventInput{CorrelationID: next, Data: &world.StepStarted{}})
		step = next
	}
	if err := w.ReleaseRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	return run, res.Run.LastSeq
}

// TestMissingNewestCommitOfSerialRun: a serial run's commits write no
// entity item (bare steps), so the write marks could not show that its
// newest commit was deleted: a World that read the run afresh found a
// dense, shorter log, and the step that commit completed was taken over
// and run again. The run lease's release now records the log's end in the
// lease item, and every read a commit is judged on reads it: a whole-log
// ListEvents, an Append's load, a run's end (a writer that holds no lease:
// skein runs cancel), the engine's delivery. Each is world.ErrCorrupt
// naming the missing events, and nothing is written.
func TestMissingNewestCommitOfSerialRun(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	run, last := leasedSerialRun(t, f.open(t), "first", 4) // commits keyed 0, 4, 7, 10: events 1-13
	if last != 13 {
		t.Fatalf("last sequence number %d, want 13", last)
	}
	f.deleteCommit(t, run, 10) // events 11-13: step 3's completion, step 4 started
	before := f.commitKeys(t, run)

	_, err := runrules.AllEvents(ctx, f.open(t), run)
	wantGap(t, "ListEvents", err, f.cfg.Table, run, "events 11-13")
	_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: ids.New(world.PrefixStep), Data: &world.StepCreated{StepName: "s"}}}})
	wantGap(t, "Append on a fresh read", err, f.cfg.Table, run, "events 11-13")
	_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.AttributeSet{Attributes: map[string]string{"k": "v"}}}}})
	wantGap(t, "Append of a run event", err, f.cfg.Table, run, "events 11-13")
	_, err = f.open(t).Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{}}}})
	wantGap(t, "the run's end", err, f.cfg.Table, run, "events 11-13")
	f.deliverOnHole(t, run, "events 11-13", before)

	// A run's end judged on a snapshot read before the lost commit (no
	// load: the Query of the run's entities reads the mark).
	run, last = leasedSerialRun(t, f.open(t), "first", 2)
	early := f.open(t)
	if _, err := runrules.AllEvents(ctx, early, run); err != nil {
		t.Fatal(err)
	}
	other, lease := f.open(t), &world.RunLeaseParams{RunID: run, Owner: "other"}
	if _, err := other.AcquireRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, other, run, world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"k": "v"}}})
	if err := other.ReleaseRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	f.deleteCommit(t, run, last)
	_, err = early.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{Data: &world.RunCancelled{}}}})
	wantGap(t, "the run's end on an earlier snapshot", err, f.cfg.Table, run, fmt.Sprintf("events %d-%d", last+1, last+1))
}

// leaseFloor reads the mark of the run lease item (-1: no item).
func (f *gapsFixture) leaseFloor(t *testing.T, runID string) int64 {
	t.Helper()
	out, err := f.c.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.cfg.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "r#" + runID}, "sk": &types.AttributeValueMemberS{Value: "lease"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return -1
	}
	n, ok := out.Item["lq"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLeaseFloorFollowsOtherWriters: the mark never makes a sound log
// read as short, and is never lowered: commits made without the lease, a
// release by a World whose snapshot is older than the mark, a release by
// an owner that does not hold the lease, and a run that ends (its item is
// deleted), each then read afresh.
func TestLeaseFloorFollowsOtherWriters(t *testing.T) {
	f := newGapsFixture(t)
	ctx := context.Background()
	a, b := f.open(t), f.open(t)
	run, last := leasedSerialRun(t, a, "a", 3)
	if got := f.leaseFloor(t, run); got != last {
		t.Fatalf("mark after the first release: %d, want %d", got, last)
	}
	// b writes without the lease (a background executor's commit), then
	// takes it, reads and releases: the mark follows.
	mustAppend(t, b, run, world.EventInput{CorrelationID: ids.New(world.PrefixStep), Data: &world.StepCreated{StepName: "bg"}})
	cycle := func(w world.World, owner string, read bool) {
		t.Helper()
		lease := &world.RunLeaseParams{RunID: run, Owner: owner}
		if _, err := w.AcquireRunLease(ctx, lease); err != nil {
			t.Fatal(err)
		}
		if read {
			if _, err := runrules.AllEvents(ctx, w, run); err != nil {
				t.Fatalf("read under the lease: %v", err)
			}
		}
		if err := w.ReleaseRunLease(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	cycle(b, "b", true)
	if got := f.leaseFloor(t, run); got != last+1 {
		t.Fatalf("mark after b's release: %d, want %d", got, last+1)
	}
	// a's snapshot is one commit behind: its release keeps the mark.
	cycle(a, "a2", false)
	if got := f.leaseFloor(t, run); got != last+1 {
		t.Fatalf("mark after a stale release: %d, want %d", got, last+1)
	}
	cycle(f.open(t), "c", true)
	// A release by another owner than the holder changes nothing.
	lease := &world.RunLeaseParams{RunID: run, Owner: "x"}
	if _, err := a.AcquireRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := b.ReleaseRunLease(ctx, &world.RunLeaseParams{RunID: run, Owner: "y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: run, Owner: "y"}); !errors.Is(err, world.ErrLeaseHeld) {
		t.Fatalf("acquire of a held lease: %v, want ErrLeaseHeld", err)
	}
	if err := a.ReleaseRunLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	// The run ends: a release that knows it deletes the item.
	mustAppend(t, b, run, world.EventInput{Data: &world.RunCompleted{Output: []byte(`1`)}})
	cycle(b, "z", false)
	if got := f.leaseFloor(t, run); got != -1 {
		t.Fatalf("the ended run's lease item: mark %d, want no item", got)
	}
	if r, err := f.open(t).GetRun(ctx, &world.GetRunParams{RunID: run}); err != nil || r.Status != world.RunStatusCompleted {
		t.Fatalf("the ended run: %v, %v", r, err)
	}
}
