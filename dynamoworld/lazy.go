package dynamoworld

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Lazy steps. A commit that creates a step and starts it (a serial step's
// step k+1) writes no item for it when the committing World can prove the
// step absent without a condition on its item (snapshot.stepIDs): the
// step's state is then its events in that commit, and the commit item lists
// it in attribute u (step ID -> the commit's key), carried forward by every
// later commit. The next commit that changes the step drops it from u: one
// that ends it leaves it bare (bare.go), any other writes its item (a put
// conditioned on its absence). RenewStepLease of a lazy step writes its
// lease record (leaseRecordKey: attempt and lease), never its item; a read
// of the running step takes the record's lease when it is for the step's
// attempt, and a commit that takes the step over checks that the record
// still holds the lease it judged. So a step's state is its item when there
// is one, else, when the newest commit lists it, the replay of its events
// in the commit u names (with its lease record's lease); else, when the
// run's head says b, the replay of its events in the log; else it does
// not exist.

// attrLazy is the commit item's map of lazy steps.
const attrLazy = "u"

// maxLazySteps bounds the lazy steps a commit item lists: beyond it, new
// steps get their item at once (the list is carried by every commit).
const maxLazySteps = 4

func setLazy(it item, lazy map[string]int64) {
	if len(lazy) == 0 {
		return
	}
	m := make(map[string]types.AttributeValue, len(lazy))
	for id, prev := range lazy {
		m[id] = num(prev)
	}
	it[attrLazy] = &types.AttributeValueMemberM{Value: m}
}

// decodeLazy reads a commit item's lazy steps (never nil).
func decodeLazy(it item) map[string]int64 {
	out := map[string]int64{}
	m, ok := it[attrLazy].(*types.AttributeValueMemberM)
	if !ok {
		return out
	}
	for id, v := range m.Value {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if prev, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				out[id] = prev
			}
		}
	}
	return out
}

// lastCommit reads a run's newest commit item whole (its events and lazy
// steps), strongly consistent; nil when the run has none.
func (w *store) lastCommit(ctx context.Context, runID string) (item, error) {
	return w.queryNewestCommit(ctx, runPK(runID), nil)
}

// lazySteps replays the lazy steps ids (step ID -> its commit's key) from
// their commits; newest is the run's newest commit, already read. Every
// step must be found. summed: the run's head says its items carry
// checksums (requireSums), when the caller read it. leases: the steps'
// lease records, when the caller read them (nil: read them).
func (w *store) lazySteps(ctx context.Context, runID string, newest item, ids map[string]int64, summed bool, leases map[itemKey]item) (map[string]*world.Step, error) {
	newestPrev, _ := prevFromSK(getS(newest, attrSK))
	commits := map[int64]item{}
	var keys []itemKey
	for _, prev := range ids {
		if prev == newestPrev && newest != nil {
			commits[prev] = newest
		} else if _, ok := commits[prev]; !ok {
			commits[prev] = nil
			keys = append(keys, commitKey(runID, prev))
		}
	}
	nCommits := len(keys)
	if leases == nil && len(ids) > 0 {
		// The lease records in the same request (a lazy step is running).
		for id := range ids {
			keys = append(keys, leaseRecordKey(runID, id))
		}
	}
	if len(keys) > 0 {
		got, err := w.batchGet(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, k := range keys[:nCommits] {
			prev, _ := prevFromSK(k.sk)
			commits[prev] = got[k]
		}
		if leases == nil {
			leases = map[itemKey]item{}
			for _, k := range keys[nCommits:] {
				leases[k] = got[k] // verified by batchGet
			}
		}
	}
	var its []item
	for prev, it := range commits {
		if it == nil {
			return nil, fmt.Errorf("dynamoworld: run %s: the commit after sequence %d, which holds a step, is missing", runID, prev)
		}
		its = append(its, it)
	}
	if err := w.requireSums(summed, runID, its...); err != nil {
		return nil, err
	}
	fetched, err := w.cc.fetchCommits(ctx, its)
	if err != nil {
		return nil, err
	}
	evs := map[int64][]world.Event{}
	for prev, it := range commits {
		if evs[prev], err = decodeCommit(it, fetched); err != nil {
			return nil, err
		}
	}
	out := make(map[string]*world.Step, len(ids))
	for id, prev := range ids {
		st, err := foldStep(runID, id, evs[prev])
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, fmt.Errorf("dynamoworld: run %s: step %s is not in the commit after sequence %d that lists it", runID, id, prev)
		}
		out[id] = st
	}
	overlayLeases(runID, out, leases)
	return out, nil
}

// overlayLeases gives the running lazy steps steps the lease their lease
// records (got, as read) hold, when a record is for the step's attempt and
// later than its events' lease.
func overlayLeases(runID string, steps map[string]*world.Step, got map[itemKey]item) {
	for id, st := range steps {
		rec := got[leaseRecordKey(runID, id)]
		if st.Status != world.StepStatusRunning || rec == nil || getN(rec, aAttempt) != int64(st.Attempt) {
			continue
		}
		if lease := getT(rec, aLeaseExp); lease.After(st.LeaseExpiresAt) {
			st.LeaseExpiresAt = lease
		}
	}
}

// leaseRecordCond conditions a commit that takes a lazy step over on its
// lease record holding no lease later than the one it judged (a read takes
// only a later one: overlayLeases), so that a renewal it did not see sends
// it back to judge again, and an earlier record (a renewer's clock behind)
// never stops it.
func leaseRecordCond(lease time.Time) func(e *expr) string {
	return func(e *expr) string {
		return "attribute_not_exists(" + e.n(attrSK) + ") OR " + e.n(aLeaseExp) + " <= " + e.v(num(lease.UnixNano()))
	}
}

// foldStep replays one step's events of a commit with world.Apply, each at
// its own time, as they were judged: the state the commit left it in.
func foldStep(runID, stepID string, evs []world.Event) (*world.Step, error) {
	var st *world.Step
	run := &world.Run{RunID: runID, Status: world.RunStatusRunning}
	for _, ev := range evs {
		if ev.CorrelationID != stepID {
			continue
		}
		if !world.IsStepEvent(ev.Type()) {
			continue
		}
		eff, err := world.Apply(world.State{Run: run, Step: st}, world.Event{RunID: runID, EventID: ev.EventID, CorrelationID: stepID, Data: ev.Data}, ev.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("dynamoworld: step %s of run %s: its events do not replay: %w", stepID, runID, err)
		}
		if eff.Step != nil {
			st = eff.Step
		}
	}
	return st, nil
}

// readLazyStep reads a step that has no item: from the commit the newest
// commit lists it in. found is false when the newest commit does not list
// it.
func (w *store) readLazyStep(ctx context.Context, runID, stepID string) (st *world.Step, found bool, err error) {
	st, _, found, err = w.readLazyStepAt(ctx, runID, stepID)
	return st, found, err
}

// readLazyStepAt is readLazyStep that also returns the last sequence
// number of the newest commit it read (the mark of an item written from
// it: aWrittenAt).
func (w *store) readLazyStepAt(ctx context.Context, runID, stepID string) (st *world.Step, lastSeq int64, found bool, err error) {
	newest, err := w.lastCommit(ctx, runID)
	if err != nil || newest == nil {
		return nil, 0, false, err
	}
	prev, ok := decodeLazy(newest)[stepID]
	if !ok {
		return nil, 0, false, nil
	}
	steps, err := w.lazySteps(ctx, runID, newest, map[string]int64{stepID: prev}, false, nil)
	if err != nil {
		return nil, 0, false, err
	}
	return steps[stepID], getN(newest, aLastSeq), true, nil
}
