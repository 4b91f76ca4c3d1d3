package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// Bare steps. A lazy step (lazy.go) that a commit completes or fails gets
// no item at all: its state stays its events in the log, and the commit
// that ends it is the only item that commit writes for it. So a serial
// step costs one item, the commit. Such a step is bare: it has no item and
// no commit lists it in u. Only runs created by this format have bare
// steps: their head says b from run_created on (a run created before, in
// flight when its table moved to version 2, may hold a lazy step whose
// item an old renewal wrote, and ending that bare would leave the item
// stale). The commit that makes steps bare lists them in bd (priming
// follows it). A read that finds no step item in a run whose head says b
// reads the log and folds the step's events (foldSteps). Those reads are
// the rare ones (a step named after it ended: a duplicate, a compensation,
// a listing); the engine's own commits know their steps. A later commit
// that changes a bare step (its compensation) writes its item, conditioned
// on its absence, as for a lazy step.
//
// Only commits write step items (a lazy step's lease renewal writes a
// lease record, leaseRecordKey, not its item), and every commit is fenced,
// so a snapshot's belief that a step is lazy or bare is exact as of its
// last sequence number. Worlds of version 1 know none of this: they must
// not write to a table of version 2 (New refuses it; a deploy that moves a
// table stops the old code first).

const (
	attrMayBare  = itemsum.HeadFlag // on a run head ("b"): the run's lazy steps may end bare
	attrBareMade = "bd"             // on a commit: the steps it made bare
)

// endsBare reports whether a lazy step's change to st leaves it bare.
func endsBare(st *world.Step) bool {
	return st.Status == world.StepStatusCompleted || st.Status == world.StepStatusFailed
}

// setBareMade lists on a commit item the steps it made bare.
func setBareMade(it item, made []string) {
	if len(made) > 0 {
		it[attrBareMade] = &types.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(made))}
	}
}

// decodeMayBare reads a run head's b.
func decodeMayBare(head item) bool { return head != nil && getN(head, attrMayBare) == 1 }

func decodeBareMade(it item) []string {
	if ss, ok := it[attrBareMade].(*types.AttributeValueMemberSS); ok {
		return ss.Value
	}
	return nil
}

// foldedSteps is what a read of a run's log found of its steps.
type foldedSteps struct {
	states  map[string]*world.Step // the steps asked for that the log has
	bare    map[string]bool        // the steps the log leaves bare (bd, unchanged since)
	ids     *idSet                 // every step ID of the log read
	created map[string]int64       // the sequence number of each step's first event
	lastSeq int64                  // the log was read up to this event
}

// foldSteps reads a run's log from its start, up to event upTo (all of it
// when upTo is 0), and folds the events of the steps ids (every step when
// ids is nil) with world.Apply, each at its own time, as they were judged;
// it follows the commits' bd to tell which steps are bare. Every read of
// the log checks it (chain, checksums, its end against the head).
func (w *store) foldSteps(ctx context.Context, runID string, ids map[string]bool, upTo int64) (*foldedSteps, error) {
	type commitRead struct {
		bd  []string
		evs []world.Event
	}
	commits := map[int64]commitRead{}
	onCommit := func(prev int64, it item, evs []world.Event) {
		commits[prev] = commitRead{bd: decodeBareMade(it), evs: evs}
	}
	pg := world.Pagination{Limit: world.MaxPageLimit}
	for {
		page, err := w.listEventsOnce(ctx, runID, "", pg, onCommit)
		if err != nil {
			return nil, err
		}
		if !page.HasMore {
			break
		}
		pg.Cursor = page.Cursor
	}
	out := &foldedSteps{states: map[string]*world.Step{}, bare: map[string]bool{}, ids: newIDSet(), created: map[string]int64{}}
	run := &world.Run{RunID: runID, Status: world.RunStatusRunning}
	for _, prev := range slices.Sorted(maps.Keys(commits)) {
		c := commits[prev]
		for _, ev := range c.evs {
			if upTo > 0 && ev.Seq > upTo {
				return out, nil
			}
			out.lastSeq = ev.Seq
			if !world.IsStepEvent(ev.Type()) {
				continue
			}
			id := ev.CorrelationID
			out.ids.add(id)
			if _, seen := out.created[id]; !seen {
				out.created[id] = ev.Seq
			}
			if !slices.Contains(c.bd, id) {
				delete(out.bare, id) // a later change writes its item
			}
			if ids != nil && !ids[id] {
				continue
			}
			eff, err := world.Apply(world.State{Run: run, Step: out.states[id]}, world.Event{RunID: runID, EventID: ev.EventID, CorrelationID: id, Data: ev.Data}, ev.CreatedAt)
			if err != nil {
				return nil, fmt.Errorf("%w: dynamoworld: step %s of run %s: its events do not replay: %v", world.ErrCorrupt, id, runID, err)
			}
			if eff.Step != nil {
				out.states[id] = eff.Step
			}
		}
		for _, id := range c.bd {
			out.bare[id] = true
		}
	}
	return out, nil
}

// logGone is a failed read of a run's log (err) as the run's expiry makes
// it: world.ErrGone when its newest commit is past its TTL (DynamoDB
// deletes an expired run's items one by one), err otherwise.
func (w *store) logGone(err error, runID string, newest item) error {
	if errors.Is(err, world.ErrCorrupt) && newest != nil && w.expired(newest) {
		return fmt.Errorf("%w: DynamoDB table %s: run %s has expired (its commit items are being deleted)", world.ErrGone, w.cfg.Table, runID)
	}
	return err
}

// bareStep reads a step that has no item and that the newest commit does
// not list as lazy: from the log, when the run's head says it may have
// bare steps; nil when the step is not there.
func (w *store) bareStep(ctx context.Context, runID, stepID string) (*world.Step, error) {
	newest, head, err := w.lastCommitAndHead(ctx, runID)
	switch {
	case err != nil:
		return nil, err
	case head == nil && newest != nil:
		return nil, w.headless(runID, []item{newest})
	case !decodeMayBare(head):
		return nil, nil
	}
	f, err := w.foldSteps(ctx, runID, map[string]bool{stepID: true}, 0)
	if err != nil {
		return nil, w.logGone(err, runID, newest)
	}
	if st := f.states[stepID]; st != nil && !f.bare[stepID] {
		return nil, fmt.Errorf("%w: DynamoDB table %s: run %s: step %s has no item, and the log does not leave it bare", world.ErrCorrupt, w.cfg.Table, runID, stepID)
	}
	return f.states[stepID], nil
}

// lastCommitAndHead reads a run's newest commit and its head in one
// strongly consistent Query (the head sorts right after the commits).
func (w *store) lastCommitAndHead(ctx context.Context, runID string) (last, head item, err error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " +
			e.n(attrSK) + " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(skRunHead))),
		ScanIndexForward: aws.Bool(false),
		ConsistentRead:   aws.Bool(true),
		Limit:            aws.Int32(2),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.Query(ctx, in)
	if err != nil {
		return nil, nil, ddbErr("Query", w.cfg.Table, err)
	}
	w.countRead(out.ConsumedCapacity)
	if err := w.verified(out.Items...); err != nil {
		return nil, nil, err
	}
	for _, it := range out.Items {
		if getS(it, attrSK) == skRunHead {
			head = it
		} else if last == nil {
			last = it
		}
	}
	return last, head, nil
}
