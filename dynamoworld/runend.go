package dynamoworld

import (
	"context"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// committed caches the snapshot a landed commit planned, with its new steps
// in the run's step IDs, then finishes a run's end: the deletions that did
// not fit the transaction, and the retention sweep.
func (w *store) committed(ctx context.Context, pl *plan) {
	if ids := pl.next.stepIDs; ids != nil {
		for _, id := range pl.newSteps() {
			ids.add(id)
		}
	}
	w.cache.put(pl.runID, pl.next)
	if !pl.endsRun {
		return
	}
	if err := w.writeEach(ctx, pl.overflow); err != nil {
		w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: run ended, but some hooks or waits were not deleted", slog.String("run", pl.runID), slog.Any("err", err))
	}
	if w.cfg.Retention > 0 && pl.prevRun != nil && !pl.prevRun.Status.Terminal() {
		if err := w.expireRun(ctx, pl.runID, pl.now.Add(w.cfg.Retention).Unix()); err != nil {
			w.logger.LogAttrs(ctx, slog.LevelWarn, "dynamoworld: retention sweep incomplete", slog.String("run", pl.runID), slog.Any("err", err))
		}
	}
}

// runEndItems reads, for a commit that ends a run planned on a snapshot
// of it as of lastSeq, the run's hook links, steps and waits (and the
// small items that sort between them: the lease, stream markers) with one
// strongly consistent Query of its partition: the hooks and waits the end
// deletes, whether or not the snapshot knows them all, and the write
// marks of the run's entities (aWrittenAt). A mark past lastSeq means the
// log the commit was judged on ends early: world.ErrCorrupt naming the
// missing range, unless a commit landed meanwhile (checkAhead; the plan's
// fence then fails). A run-ending commit touches no entity the lost
// commits wrote, so no other condition would catch it.
func (w *store) runEndItems(ctx context.Context, runID string, lastSeq int64) (*runEndItems, error) {
	its, err := w.queryItems(ctx, runPK(runID), prefHook, entitiesEnd,
		attrPK, attrSK, aHookID, aToken, aWrittenAt, itemsum.Attr(aWrittenAt), itemsum.Mark, aLogFloor, attrTTL)
	if err != nil {
		return nil, err
	}
	ends := &runEndItems{}
	var ahead, floor int64
	for _, it := range its {
		sk := getS(it, attrSK)
		switch {
		case strings.HasPrefix(sk, prefHook):
			ends.hooks = append(ends.hooks, &world.Hook{HookID: getS(it, aHookID), Token: getS(it, aToken)})
		case strings.HasPrefix(sk, prefWait):
			ends.waits = append(ends.waits, sk[len(prefWait):])
		case sk == skLease:
			floor = logFloor(it)
		}
		if q := getN(it, aWrittenAt); q > lastSeq && q > ahead {
			ahead = q
		}
	}
	if ahead > 0 {
		if err := w.checkAhead(ctx, runID, ahead); err != nil {
			return nil, err
		}
	}
	if err := w.checkFloor(ctx, runID, lastSeq, floor); err != nil {
		return nil, err
	}
	return ends, nil
}

// entitiesEnd bounds the sort keys of a run's entities from above: the
// hook links (h#), steps (s#) and waits (w#) sort between prefHook and it.
const entitiesEnd = "w$" // '$' follows '#'

// queryAll reads every item of a partition whose sort key starts with
// prefix (keysOnly: just the keys), strongly consistent.
func (w *store) queryAll(ctx context.Context, pk, prefix string, keysOnly bool) ([]item, error) {
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
	return w.queryPages(ctx, in)
}

// queryItems reads the attributes attrs of every item of a partition whose
// sort key is between from and to, strongly consistent.
func (w *store) queryItems(ctx context.Context, pk, from, to string, attrs ...string) ([]item, error) {
	e := newExpr()
	names := make([]string, len(attrs))
	for i, a := range attrs {
		names[i] = e.n(a)
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(pk)) + " AND " + e.n(attrSK) + " BETWEEN " + e.v(str(from)) + " AND " + e.v(str(to))),
		ProjectionExpression:   aws.String(strings.Join(names, ", ")),
		ConsistentRead:         aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	return w.queryPages(ctx, in)
}

// queryPages reads every page of a Query, verifying the items.
func (w *store) queryPages(ctx context.Context, in *dynamodb.QueryInput) ([]item, error) {
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
		if err := w.verified(res.Items...); err != nil {
			return nil, err
		}
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
func (w *store) writeEach(ctx context.Context, ops []*op) error {
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
func (w *store) expireRun(ctx context.Context, runID string, ttl int64) error {
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
