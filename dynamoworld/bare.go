package dynamoworld

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Bare steps. A lazy step (lazy.go) that a commit completes or fails gets
// no item at all: its state stays its events in the log, and the commit
// that ends it is the only item that commit writes for it. So a serial
// step costs one item, the commit. Such a step is bare: it has no item and
// no commit lists it in u. The commit that makes steps bare lists them in
// bd, and every commit from then on says b (the run may have bare steps),
// so that a read that finds no step item knows whether the absence is an
// answer: where b is set, the step's state is the fold of its events in
// the log (foldSteps), found by reading the log. Those reads are the rare
// ones (a step named after it ended: a duplicate, a compensation, a
// listing); the engine's own commits know their steps. A later commit that
// changes a bare step (its compensation) writes its item, conditioned on
// its absence, as for a lazy step.
//
// Only commits write step items (a lazy step's lease renewal writes a
// lease record, leaseRecordKey, not its item), and every commit is fenced,
// so a snapshot's belief that a step is lazy or bare is exact as of its
// last sequence number.

const (
	attrMayBare  = "b"  // on a commit: the run may have bare steps
	attrBareMade = "bd" // on a commit: the steps it made bare
)

// endsBare reports whether a lazy step's change to st leaves it bare.
func endsBare(st *world.Step) bool {
	return st.Status == world.StepStatusCompleted || st.Status == world.StepStatusFailed
}

// setBare records on a commit item whether the run may have bare steps and
// which steps it made bare.
func setBare(it item, mayBare bool, made []string) {
	if mayBare {
		setN(it, attrMayBare, 1)
	}
	if len(made) > 0 {
		it[attrBareMade] = &types.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(made))}
	}
}

func decodeMayBare(it item) bool { return it != nil && getN(it, attrMayBare) == 1 }

func decodeBareMade(it item) []string {
	if ss, ok := it[attrBareMade].(*types.AttributeValueMemberSS); ok {
		return ss.Value
	}
	return nil
}

// foldedSteps is what a read of a run's log found of its steps.
type foldedSteps struct {
	states  map[string]*world.Step // the steps asked for that the log has
	ids     *idSet                 // every step ID of the log read
	lastSeq int64                  // the log was read up to this event
}

// foldSteps reads a run's log from its start, up to event upTo (all of it
// when upTo is 0), and folds the events of the steps ids (every step when
// ids is nil) with
// world.Apply, each at its own time, as they were judged. Every read of
// the log checks it (chain, checksums, its end against the head).
func (w *store) foldSteps(ctx context.Context, runID string, ids map[string]bool, upTo int64) (*foldedSteps, error) {
	out := &foldedSteps{states: map[string]*world.Step{}, ids: newIDSet()}
	run := &world.Run{RunID: runID, Status: world.RunStatusRunning}
	pg := world.Pagination{Limit: world.MaxPageLimit}
	for {
		page, err := w.listEventsOnce(ctx, runID, "", pg)
		if err != nil {
			return nil, err
		}
		for _, ev := range page.Items {
			if upTo > 0 && ev.Seq > upTo {
				return out, nil
			}
			out.lastSeq = ev.Seq
			if !world.IsStepEvent(ev.Type()) {
				continue
			}
			out.ids.add(ev.CorrelationID)
			if ids != nil && !ids[ev.CorrelationID] {
				continue
			}
			st := out.states[ev.CorrelationID]
			eff, err := world.Apply(world.State{Run: run, Step: st}, world.Event{RunID: runID, EventID: ev.EventID, CorrelationID: ev.CorrelationID, Data: ev.Data}, ev.CreatedAt)
			if err != nil {
				return nil, fmt.Errorf("%w: dynamoworld: step %s of run %s: its events do not replay: %v", world.ErrCorrupt, ev.CorrelationID, runID, err)
			}
			if eff.Step != nil {
				out.states[ev.CorrelationID] = eff.Step
			}
		}
		if !page.HasMore {
			return out, nil
		}
		pg.Cursor = page.Cursor
	}
}

// bareStep reads a step that has no item and that the newest commit does
// not list as lazy: from the log, when the newest commit says the run may
// have bare steps; nil when the step is not there.
func (w *store) bareStep(ctx context.Context, runID, stepID string) (*world.Step, error) {
	newest, err := w.lastCommit(ctx, runID)
	if err != nil || !decodeMayBare(newest) {
		return nil, err
	}
	f, err := w.foldSteps(ctx, runID, map[string]bool{stepID: true}, 0)
	if err != nil {
		return nil, err
	}
	return f.states[stepID], nil
}
