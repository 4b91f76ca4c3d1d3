package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Append applies p.Events to one run in a single TransactWriteItems.
//
// The events are judged by world.Apply on a snapshot of the run: the cached
// one when this World wrote the run last (no read: one round trip per
// commit), otherwise one read with TransactGetItems. The transaction then
// carries the snapshot's assumptions as conditions: the run head's sequence
// number (the fence, which every event moves), attribute_not_exists on every
// item an event creates (steps, waits, events, hook IDs, tokens, run
// idempotency keys) and, for step_started on a running step, its unrenewed
// lease. A cancelled transaction is read reason by reason: a taken run ID or
// idempotency key is the refusal itself; a taken token turns hook_created
// into hook_conflict; anything else means the snapshot was stale, and the
// commit is judged again on a fresh read, so refusals are always those of
// world.Apply on the current state.
func (w *World) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	switch {
	case p == nil:
		return nil, invalid("nil AppendParams")
	case len(p.Events) == 0:
		return nil, invalid("append to run %q without events", p.RunID)
	case p.IfLastSeq < 0:
		return nil, invalid("negative IfLastSeq %d", p.IfLastSeq)
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	mu := w.runLock(p.RunID)
	mu.Lock()
	defer mu.Unlock()
	// An invalid first event is refused before any state is read, exactly as
	// world.Apply would refuse it.
	if _, err := world.Apply(world.State{}, world.Event{RunID: p.RunID, CorrelationID: p.Events[0].CorrelationID, Data: p.Events[0].Data}, w.now()); errors.Is(err, world.ErrInvalid) {
		return nil, &world.CommitError{Index: 0, Err: err}
	}
	// Event IDs are minted once: a retried commit appends the same events.
	eventIDs := make([]string, len(p.Events))
	for i := range eventIDs {
		eventIDs[i] = w.ids.New(world.PrefixEvent)
	}
	tok := &tokenInfo{holders: map[string]*world.Hook{}, stale: map[string]string{}}
	forceRead := false
	contention := 0
	var lastErr error
	// sent: the commits sent so far, by their time. One whose answer was
	// lost (or turned into a cancellation by a retry) may have landed: the
	// commit found at its fence, with this Append's event IDs, says which.
	sent := map[int64]*sentCommit{}
	for iter := 0; iter < 4*w.cfg.MaxAttempts && contention < w.cfg.MaxAttempts; iter++ {
		now := w.now()
		snap, fresh := w.cache.get(p.RunID), false
		if snap == nil && !forceRead {
			if _, create := p.Events[0].Data.(*world.RunCreated); create {
				snap = newSnapshot(nil)
				snap.blind, snap.complete, snap.counted = true, true, true
				if w.registers {
					snap.streams = streamsNone // its head is created with os = 0
				}
				snap.stepIDs = newIDSet()
			}
		}
		if snap != nil && !forceRead && p.IfLastSeq > 0 && lastSeqOf(snap.run) != p.IfLastSeq {
			snap = nil
		}
		var (
			pl       *plan
			ref      *refusal
			needLoad = snap == nil || forceRead
		)
		if !needLoad {
			pl, ref, needLoad = w.makePlan(snap, p, eventIDs, now, tok)
		}
		if needLoad {
			var err error
			if snap, err = w.load(ctx, p.RunID, loadKeys(p.RunID, p.Events)); err != nil {
				return nil, err
			}
			fresh = true
			forceRead = false
			if p.IfLastSeq > 0 && lastSeqOf(snap.run) != p.IfLastSeq {
				return nil, fmt.Errorf("%w: run %s: last sequence is %d, not %d", world.ErrConflict, p.RunID, lastSeqOf(snap.run), p.IfLastSeq)
			}
			pl, ref, _ = w.makePlan(snap, p, eventIDs, now, tok)
		}
		if ref != nil {
			if !fresh {
				forceRead = true // refused on a cached snapshot: confirm on the current state
				continue
			}
			return nil, &world.CommitError{Index: ref.index, Err: ref.err}
		}
		if len(pl.events) == 0 {
			if !fresh && !snap.blind {
				forceRead = true // nothing to write: the answer must come from the current state
				continue
			}
			return &world.AppendResult{Run: cloneRun(snap.run), Results: pl.results}, nil
		}
		t, err := w.build(ctx, pl, tok)
		if err != nil {
			return nil, err
		}
		if err := w.cc.upload(ctx, t.uploads); err != nil {
			return nil, err
		}
		sent[pl.now.UnixNano()] = &sentCommit{pl, t}
		err = w.write(ctx, t.ops)
		if err == nil {
			w.committed(ctx, pl, t)
			return pl.result(), nil
		}
		ci, ok := cancelled(err, t.ops)
		if ok && ci.fence && ci.fenceItem != nil {
			if landed, err := w.ours(ctx, ci.fenceItem, eventIDs[0], sent); err != nil {
				return nil, err
			} else if landed != nil {
				w.committed(ctx, landed.pl, landed.t)
				return landed.pl.result(), nil
			}
		}
		if !ok {
			// The outcome is unknown (the SDK's own retries, which reuse the
			// request token, are exhausted): forget the snapshot.
			w.cache.drop(p.RunID)
			return nil, ddbErr("TransactWriteItems", w.cfg.Table, err)
		}
		lastErr = err
		switch {
		case ci.validation != "":
			return nil, ddbErr("TransactWriteItems", w.cfg.Table, fmt.Errorf("%s: %w", ci.validation, err))
		case pl.created && (ci.head || ci.fence):
			return nil, &world.CommitError{Index: 0, Err: &world.RunExistsError{RunID: p.RunID}}
		case pl.created && ci.idem:
			holder := ci.idemRun
			if holder == "" {
				if holder, err = w.idemHolder(ctx, pl.idemKey); err != nil {
					return nil, err
				}
			}
			if holder != "" {
				return nil, &world.CommitError{Index: 0, Err: &world.RunExistsError{RunID: holder, IdempotencyKey: pl.idemKey}}
			}
			contention++
		case ci.fence || ci.head || ci.other || ci.global || ci.idem:
			// The snapshot was stale: judge again on the current state. The
			// first time is routine (another writer got there first).
			w.cache.drop(p.RunID)
			forceRead = true
			if contention++; contention > 1 {
				if err := backoff(ctx, contention); err != nil {
					return nil, err
				}
			}
		case len(ci.tokens) > 0 || len(ci.holders) > 0:
			for _, token := range ci.holders {
				delete(tok.holders, token)
			}
			for token, old := range ci.tokens {
				if err := w.judgeToken(ctx, tok, token, old); err != nil {
					return nil, err
				}
			}
		default: // TransactionConflict or throttling inside the transaction
			contention++
			forceRead = contention > 3
			if err := backoff(ctx, contention); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("dynamoworld: append to run %s: gave up after %d attempts under contention: %w", p.RunID, w.cfg.MaxAttempts, lastErr)
}

// sentCommit is a commit Append sent.
type sentCommit struct {
	pl *plan
	t  *txn
}

// ours reports which of this Append's commits the commit item found at the
// fence is, if it is one of them: it then carries the Append's first event
// ID, and its time tells the attempt.
func (w *World) ours(ctx context.Context, found item, firstEventID string, sent map[int64]*sentCommit) (*sentCommit, error) {
	fetched, err := w.cc.fetch(ctx, found)
	if err != nil {
		return nil, err
	}
	evs, err := commitEvents(found, fetched)
	if err != nil || len(evs) == 0 || evs[0].ID != firstEventID {
		return nil, err
	}
	sc := sent[evs[0].At]
	if sc == nil {
		return nil, fmt.Errorf("dynamoworld: run %s: a commit of this append landed in an attempt it cannot identify", getS(found, attrPK)[2:])
	}
	return sc, nil
}

func lastSeqOf(r *world.Run) int64 {
	if r == nil {
		return 0
	}
	return r.LastSeq
}

func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(min(200, 2<<min(attempt, 7))) * time.Millisecond
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// idemHolder reads the run a run idempotency key belongs to ("" if none).
func (w *World) idemHolder(ctx context.Context, key string) (string, error) {
	out, err := w.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.cfg.Table), Key: idemKey(key).av(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", ddbErr("GetItem", w.cfg.Table, err)
	}
	return getS(out.Item, aRun), nil
}

// judgeToken decides what a taken token means: a live holder (an active
// hook of any run) makes the next attempt's hook_created a hook_conflict; a
// holder whose hook is gone or whose run has ended left a stale token item
// (a run's end whose clean-up did not finish), which the next attempt takes
// over.
func (w *World) judgeToken(ctx context.Context, tok *tokenInfo, token string, old item) error {
	holderID, holderRun := getS(old, aHookID), getS(old, aRun)
	if holderID == "" {
		return nil
	}
	out, err := w.ddb.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(w.cfg.Table), Key: hookKey(holderID).av()}},
		{Get: &types.Get{TableName: aws.String(w.cfg.Table), Key: runHeadKey(holderRun).av()}},
	}})
	if err != nil {
		return ddbErr("TransactGetItems", w.cfg.Table, err)
	}
	hookIt, runIt := out.Responses[0].Item, out.Responses[1].Item
	live := len(hookIt) > 0 && len(runIt) > 0 && !world.RunStatus(getS(runIt, aStatus)).Terminal()
	if !live {
		tok.stale[token] = holderID
		delete(tok.holders, token)
		return nil
	}
	fetched, err := w.cc.fetch(ctx, hookIt)
	if err != nil {
		return err
	}
	h, err := decodeHook(hookIt, fetched)
	if err != nil {
		return err
	}
	tok.holders[token] = h
	delete(tok.stale, token)
	return nil
}

// result is what Append returns for a committed plan. Entities are copies:
// the plan's own values live on in the cache.
func (pl *plan) result() *world.AppendResult {
	res := &world.AppendResult{Run: cloneRun(pl.run), Results: make([]world.EventResult, len(pl.results))}
	for i, r := range pl.results {
		if r.Event != nil {
			ev := *r.Event
			r.Event = &ev
		}
		if r.Step != nil {
			s := *r.Step
			r.Step = &s
		}
		if r.Hook != nil {
			h := *r.Hook
			r.Hook = &h
		}
		if r.Wait != nil {
			wt := *r.Wait
			r.Wait = &wt
		}
		res.Results[i] = r
	}
	return res
}

func cloneRun(r *world.Run) *world.Run {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// committed updates the cache after a commit, then finishes a run's end:
// the deletions that did not fit the transaction, and the retention sweep.
func (w *World) committed(ctx context.Context, pl *plan, t *txn) {
	snap := pl.snap.clone()
	snap.run = pl.run
	for id, c := range pl.steps {
		snap.steps[id] = c.final
		if c.created && snap.stepIDs != nil {
			snap.stepIDs.add(id)
		}
	}
	snap.lazy = pl.lazy
	snap.counted, snap.nHooks, snap.nWaits = pl.counted, pl.nHooks, pl.nWaits
	snap.endChecked = snap.endChecked || pl.endsRun && pl.streamsChecked
	for id, c := range pl.waits {
		snap.waits[id] = c.final
	}
	for id, c := range pl.hooks {
		if c.final == nil || c.final.RunID == pl.runID {
			snap.hooks[id] = c.final
		}
	}
	if pl.endsRun {
		clear(snap.hooks)
		clear(snap.waits)
	}
	w.cache.put(pl.runID, snap)
	if !pl.endsRun {
		return
	}
	if err := w.writeEach(ctx, t.overflow); err != nil {
		w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: run ended, but some hooks or waits were not deleted", slog.String("run", pl.runID), slog.Any("err", err))
	}
	if w.cfg.Retention > 0 && pl.prevRun != nil && !pl.prevRun.Status.Terminal() {
		if err := w.expireRun(ctx, pl.runID, pl.now.Add(w.cfg.Retention).Unix()); err != nil {
			w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: retention sweep incomplete", slog.String("run", pl.runID), slog.Any("err", err))
		}
	}
}

// runEndDeletes lists the hooks and waits of an ending run that the plan
// does not already delete, and returns their deletions.
func (w *World) runEndDeletes(ctx context.Context, pl *plan) ([]*op, error) {
	var ops []*op
	hooks, err := w.queryAll(ctx, runPK(pl.runID), prefHook, false)
	if err != nil {
		return nil, err
	}
	for _, it := range hooks {
		id := getS(it, aHookID)
		if _, ok := pl.hooks[id]; ok {
			continue
		}
		ops = append(ops, w.hookDeletes(pl.runID, &world.Hook{HookID: id, Token: getS(it, aToken)})...)
	}
	waits, err := w.queryAll(ctx, runPK(pl.runID), prefWait, true)
	if err != nil {
		return nil, err
	}
	for _, it := range waits {
		id := getS(it, attrSK)[len(prefWait):]
		if _, ok := pl.waits[id]; ok {
			continue
		}
		ops = append(ops, deleteOp(waitKey(pl.runID, id), nil))
	}
	return ops, nil
}

// queryAll reads every item of a partition whose sort key starts with
// prefix (keysOnly: just the keys), strongly consistent.
func (w *World) queryAll(ctx context.Context, pk, prefix string, keysOnly bool) ([]item, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(pk)) + " AND begins_with(" + e.n(attrSK) + ", " + e.v(str(prefix)) + ")"),
		ConsistentRead:         aws.Bool(true),
	}
	if keysOnly {
		in.ProjectionExpression = aws.String(e.n(attrPK) + ", " + e.n(attrSK))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	var out []item
	for {
		if w.capacity {
			in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		}
		res, err := w.ddb.Query(ctx, in)
		if err != nil {
			return nil, ddbErr("Query", w.cfg.Table, err)
		}
		w.countRead(res.ConsumedCapacity)
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// writeEach performs writes one by one (follow-up deletions after a run's
// end, when they did not fit its transaction). A failed condition (a token
// now held by another hook) is not an error.
func (w *World) writeEach(ctx context.Context, ops []*op) error {
	return parallel(ctx, len(ops), 8, func(ctx context.Context, i int) error {
		o, e := ops[i], newExpr()
		var cond *string
		if o.cond != nil {
			cond = aws.String(o.cond(e))
		}
		_, err := w.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(w.cfg.Table), Key: o.key.av(), ConditionExpression: cond,
			ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		})
		if _, failed := conditionFailed(err); err != nil && !failed {
			return ddbErr("DeleteItem", w.cfg.Table, err)
		}
		return nil
	})
}

// expireRun sets the TTL attribute on every item of an ended run that does
// not have it yet (the head, the body and the items of the final commit got
// it in that commit).
func (w *World) expireRun(ctx context.Context, runID string, ttl int64) error {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                aws.String(w.cfg.Table),
		KeyConditionExpression:   aws.String(e.n(attrPK) + " = " + e.v(str(runPK(runID)))),
		FilterExpression:         aws.String("attribute_not_exists(" + e.n(attrTTL) + ")"),
		ProjectionExpression:     aws.String(e.n(attrPK) + ", " + e.n(attrSK)),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	}
	var keys []itemKey
	for {
		res, err := w.ddb.Query(ctx, in)
		if err != nil {
			return ddbErr("Query", w.cfg.Table, err)
		}
		for _, it := range res.Items {
			keys = append(keys, itemKey{getS(it, attrPK), getS(it, attrSK)})
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if r := w.cache.get(runID); r != nil && r.run != nil && r.run.IdempotencyKey != "" {
		keys = append(keys, idemKey(r.run.IdempotencyKey))
	}
	return parallel(ctx, len(keys), 8, func(ctx context.Context, i int) error {
		u := &updateBuilder{e: newExpr()}
		u.set(attrTTL, num(ttl))
		_, err := w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(w.cfg.Table), Key: keys[i].av(), UpdateExpression: aws.String(u.String()),
			ConditionExpression:      aws.String("attribute_exists(" + u.e.n(attrPK) + ")"),
			ExpressionAttributeNames: u.e.nameMap(), ExpressionAttributeValues: u.e.valueMap(),
		})
		if _, failed := conditionFailed(err); err != nil && !failed {
			return ddbErr("UpdateItem", w.cfg.Table, err)
		}
		return nil
	})
}
