package dynamoworld

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/skeinflow/skein/world"
)

// loadKeys lists the entity items a fresh read of a commit's state needs:
// the entity each event names.
func loadKeys(runID string, events []world.EventInput) []itemKey {
	var keys []itemKey
	seen := map[itemKey]bool{}
	for _, in := range events {
		var k itemKey
		switch in.Data.(type) {
		case nil:
			continue
		case *world.WaitCreated, *world.WaitCompleted:
			k = waitKey(runID, in.CorrelationID)
		case *world.HookCreated:
			k = hookKey(in.CorrelationID)
		case *world.HookReceived, *world.HookDisposed, *world.HookConflict:
			k = hookLinkKey(runID, in.CorrelationID)
		default:
			if !world.IsStepEvent(in.Type()) {
				continue
			}
			k = stepKey(runID, in.CorrelationID)
		}
		if in.CorrelationID != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// readRun reads a run: its body, its head and its newest commit, in one
// strongly consistent Query (they sort together at the end of the commits).
// It returns a nil run when the run does not exist.
func (w *store) readRun(ctx context.Context, runID string) (*world.Run, error) {
	r, _, _, err := w.readRunAndCommit(ctx, runID)
	return r, err
}

// readRunAndCommit is readRun that also returns the newest commit item and
// the head.
func (w *store) readRunAndCommit(ctx context.Context, runID string) (*world.Run, item, item, error) {
	head, body, last, err := w.queryRun(ctx, runID)
	if err != nil || head == nil {
		return nil, nil, nil, err
	}
	fetched, err := w.cc.fetch(ctx, body)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := decodeRun(head, body, last, fetched)
	return r, last, head, err
}

// runStatus reads a run's status (one Query, no claim-checked payload);
// found is false for a run that does not exist.
func (w *store) runStatus(ctx context.Context, runID string) (status world.RunStatus, found bool, err error) {
	head, _, last, err := w.queryRun(ctx, runID)
	if err != nil || head == nil {
		return "", false, err
	}
	r, err := decodeRun(head, nil, last, nil)
	if err != nil {
		return "", false, err
	}
	return r.Status, true, nil
}

// queryRun reads a run's head, body and newest commit items in one
// consistent Query; head is nil for a run that does not exist. A head and
// a newest commit that disagree on whether the run ended, or commits
// without a head, are read again once (a transaction may land during a
// Query), then are world.ErrCorrupt: the commits that ended the run, or
// its head, are missing, or one's status was edited (gaps.go).
func (w *store) queryRun(ctx context.Context, runID string) (head, body, last item, err error) {
	for try := 0; ; try++ {
		head, body, last, err = w.queryRunOnce(ctx, runID)
		switch {
		case try == 0 && missingHead(err):
		case err != nil || !endsBeforeHead(head, last):
			return head, body, last, err
		case try > 0:
			return nil, nil, nil, w.truncated(runID, head, last)
		}
	}
}

// queryRunOnce is one Query of queryRun.
func (w *store) queryRunOnce(ctx context.Context, runID string) (head, body, last item, err error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " +
			e.n(attrSK) + " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(skRunBody))),
		ScanIndexForward: aws.Bool(false),
		ConsistentRead:   aws.Bool(true),
		Limit:            aws.Int32(3),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.Query(ctx, in)
	if err != nil {
		return nil, nil, nil, ddbErr("Query", w.cfg.Table, err)
	}
	w.countRead(out.ConsumedCapacity)
	for _, it := range out.Items {
		switch sk := getS(it, attrSK); {
		case sk == skRunHead:
			head = it
		case sk == skRunBody:
			body = it
		case last == nil && len(sk) > len(prefCommit) && sk[:len(prefCommit)] == prefCommit:
			last = it
		}
	}
	switch {
	case head == nil && len(out.Items) == 0:
		return nil, nil, nil, nil
	case head == nil:
		if err := w.verified(out.Items...); err != nil {
			return nil, nil, nil, err
		}
		return nil, nil, nil, w.headless(runID, out.Items)
	}
	if last == nil {
		return nil, nil, nil, fmt.Errorf("dynamoworld: run %s has a head but no commit", runID)
	}
	if err := w.requireBody(runID, head, body); err != nil {
		return nil, nil, nil, err
	}
	// The head says whether the run's items carry checksums (checksum.go).
	if err := w.requireSums(runSummed(head) || firstCommitSummed(out.Items), runID, head, body, last); err != nil {
		return nil, nil, nil, err
	}
	if err := w.verified(out.Items...); err != nil {
		return nil, nil, nil, err
	}
	return head, body, last, nil
}

// load reads a snapshot: the run (readRun), then the entities keys names
// with TransactGetItems. The order makes it safe: the entities are at least
// as new as the run's last sequence number, and any commit after that
// number makes the commit judged on them fail its fence.
func (w *store) load(ctx context.Context, runID string, keys []itemKey, hint *stepHint) (*snapshot, error) {
	run, last, head, err := w.readRunAndCommit(ctx, runID)
	if err != nil {
		return nil, err
	}
	snap := newSnapshot(run)
	if run == nil {
		snap.nSteps = 0
		return snap, nil // nothing yet: run_created starts the counts at 0
	}
	if hint != nil && hint.seq <= run.LastSeq {
		ok, err := w.stepIDsSince(ctx, runID, hint.ids, hint.seq, run.LastSeq)
		if err != nil {
			return nil, err
		}
		if ok {
			snap.stepIDs, hint.seq = hint.ids, run.LastSeq
		}
	}
	snap.lazy = decodeLazy(last)
	snap.mayBare = decodeMayBare(head)
	snap.nSteps = decodeStepCount(last)
	if snap.nHooks, snap.nWaits, err = decodeCounts(last); err != nil {
		return nil, err
	}
	snap.streams = headStreams(head)
	// Each step's lease record too (lazy.go): a lazy step's renewed lease,
	// and the write mark of the log its renewal read; and last, the run
	// lease item, for its mark of the log's end (floors.go).
	nKeys := len(keys)
	for _, k := range keys[:nKeys] {
		if id, isStep := strings.CutPrefix(k.sk, prefStep); isStep && k.pk == runPK(runID) {
			keys = append(keys, leaseRecordKey(runID, id))
		}
	}
	got, err := w.transactGet(ctx, append(keys, leaseKey(runID)))
	if err != nil {
		return nil, err
	}
	lease := got[len(keys)]
	got = got[:len(keys)]
	if err := w.checkFloor(ctx, runID, run.LastSeq, logFloor(lease)); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return snap, nil
	}
	if err := w.requireSums(runSummed(head), runID, got...); err != nil {
		return nil, err
	}
	if err := w.requireWriteMarks(head, runID, got...); err != nil {
		return nil, err
	}
	if err := w.requireHookSums(runHooksSummed(head), runID, got...); err != nil {
		return nil, err
	}
	if ahead := entityAhead(got, run.LastSeq); ahead > 0 {
		if err := w.checkAhead(ctx, runID, ahead); err != nil {
			return nil, err
		}
	}
	fetched, err := w.cc.fetch(ctx, got...)
	if err != nil {
		return nil, err
	}
	pending, err := snap.fill(runID, keys, got, fetched)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 {
		leases := map[itemKey]item{}
		for i, k := range keys[nKeys:] {
			leases[k] = got[nKeys+i]
		}
		steps, err := w.lazySteps(ctx, runID, last, pending, runSummed(head), leases)
		if err != nil {
			return nil, err
		}
		for id := range pending {
			snap.steps[id] = steps[id]
		}
	}
	if err := w.loadBare(ctx, runID, snap, keys); err != nil {
		return nil, err
	}
	return snap, nil
}

// loadBare reads from the log the steps keys name that have no item and
// are not lazy, when the run may have bare steps (bare.go): a step found
// there is bare, one not found is absent. The log read up to the
// snapshot's last sequence number also gives every step ID of the run,
// which proves a new step absent without a condition (S6).
func (w *store) loadBare(ctx context.Context, runID string, snap *snapshot, keys []itemKey) error {
	if !snap.mayBare {
		return nil
	}
	absent := map[string]bool{}
	for _, k := range keys {
		id, isStep := strings.CutPrefix(k.sk, prefStep)
		if st, known := snap.steps[id]; isStep && k.pk == runPK(runID) && known && st == nil {
			// With every step ID known (a hint brought up to date), one
			// not among them is absent; only the others are read.
			if snap.stepIDs == nil || snap.stepIDs.has(id) {
				absent[id] = true
			}
		}
	}
	if len(absent) == 0 {
		return nil
	}
	f, err := w.foldSteps(ctx, runID, absent, snap.run.LastSeq)
	if err != nil {
		return err
	}
	for id := range absent {
		st := f.states[id]
		if st == nil {
			continue
		}
		if !f.bare[id] || !endsBare(st) {
			return fmt.Errorf("%w: dynamoworld: table %s, run %s: step %s has no item, and the log does not leave it bare (it is %s)", world.ErrCorrupt, w.cfg.Table, runID, id, st.Status)
		}
		snap.steps[id] = st
		snap.bare[id] = struct{}{}
	}
	if f.lastSeq == snap.run.LastSeq && snap.stepIDs == nil {
		snap.stepIDs = f.ids
	}
	return nil
}

// stepHint is what a dropped snapshot knew of a run's step IDs: every one
// as of event seq (a grow-only set, shared by the run's snapshots).
type stepHint struct {
	ids *idSet
	seq int64
}

// stepIDsSince adds to ids, the step IDs of a run as of event from, those
// of its commits after it up to event to: one Query of those commits
// (their checksums verified, their payloads fetched). ok is false when the
// commits read do not chain from from to to (ids may then hold some of
// them: a superset stays true).
func (w *store) stepIDsSince(ctx context.Context, runID string, ids *idSet, from, to int64) (ok bool, err error) {
	if from == to {
		return true, nil
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " +
			e.n(attrSK) + " BETWEEN " + e.v(str(commitSK(from))) + " AND " + e.v(str(commitSK(to-1)))),
		ConsistentRead: aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	its, err := w.queryPages(ctx, in)
	if err != nil {
		return false, err
	}
	if err := w.verified(its...); err != nil {
		return false, err
	}
	fetched, err := w.cc.fetchCommits(ctx, its)
	if err != nil {
		return false, err
	}
	next := from
	for _, it := range its {
		prev, isCommit := prevFromSK(getS(it, attrSK))
		if !isCommit || prev != next {
			return false, nil
		}
		evs, err := decodeCommit(it, fetched)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if world.IsStepEvent(ev.Type()) {
				ids.add(ev.CorrelationID)
			}
		}
		next = getN(it, aLastSeq)
	}
	return next == to, nil
}

// fill records in the snapshot the entities read for keys (got, their
// payloads fetched): a missing item is a known absence, but for a lazy
// step, whose state is in a commit: those are returned (step ID -> its
// commit's key). A finished run has no hooks or waits left (its end's
// deletions may follow it).
func (s *snapshot) fill(runID string, keys []itemKey, got []item, fetched map[string][]byte) (pending map[string]int64, err error) {
	terminal := s.run.Status.Terminal()
	pending = map[string]int64{}
	for i, k := range keys {
		it := got[i]
		switch {
		case k.pk == runPK(runID) && strings.HasPrefix(k.sk, prefStep):
			var st *world.Step
			id := k.sk[len(prefStep):]
			if it != nil {
				if st, err = decodeStep(it, fetched); err != nil {
					return nil, err
				}
				delete(s.lazy, id)
			} else if _, ok := s.lazy[id]; ok {
				pending[id] = s.lazy[id]
				continue
			}
			s.steps[id] = st
		case k.pk == runPK(runID) && strings.HasPrefix(k.sk, prefWait):
			var wt *world.Wait
			if it != nil && !terminal {
				wt = decodeWait(it)
			}
			s.waits[k.sk[2:]] = wt
		case k.pk == runPK(runID) && strings.HasPrefix(k.sk, prefHook):
			var h *world.Hook
			if it != nil && !terminal {
				if h, err = decodeHook(it, fetched); err != nil {
					return nil, err
				}
			}
			s.hooks[k.sk[2:]] = h
		case k.sk == skHook:
			var h *world.Hook
			if it != nil {
				if h, err = decodeHook(it, fetched); err != nil {
					return nil, err
				}
			}
			s.global[k.pk[2:]] = h
		}
	}
	return pending, nil
}

// transactGet reads items with TransactGetItems (100 at a time), strongly
// consistent; a missing item is nil.
func (w *store) transactGet(ctx context.Context, keys []itemKey) ([]item, error) {
	got := make([]item, len(keys))
	for lo := 0; lo < len(keys); lo += maxTransactionItems {
		hi := min(len(keys), lo+maxTransactionItems)
		in := &dynamodb.TransactGetItemsInput{TransactItems: make([]types.TransactGetItem, 0, hi-lo)}
		if w.capacity {
			in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		}
		for _, k := range keys[lo:hi] {
			in.TransactItems = append(in.TransactItems, types.TransactGetItem{Get: &types.Get{TableName: aws.String(w.cfg.Table), Key: k.av()}})
		}
		out, err := w.ddb.TransactGetItems(ctx, in)
		if err != nil {
			return nil, ddbErr("TransactGetItems", w.cfg.Table, err)
		}
		w.countReads(out.ConsumedCapacity)
		for i, r := range out.Responses {
			if len(r.Item) > 0 {
				got[lo+i] = r.Item
			}
		}
		if err := w.verified(got[lo:hi]...); err != nil {
			return nil, err
		}
	}
	return got, nil
}
