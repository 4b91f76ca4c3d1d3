package dynamoworld

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/skeinflow/skein/world"
)

// committed caches the snapshot a landed commit planned, with its new steps
// in the run's step IDs, then finishes a run's end: the deletions that did
// not fit the transaction, and the retention sweep.
func (w *World) committed(ctx context.Context, pl *plan) {
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

// runEndItems reads the hooks and waits of a run with two strongly
// consistent queries of its partition, for a commit that ends it when its
// snapshot does not know them all.
func (w *World) runEndItems(ctx context.Context, runID string) (*runEndItems, error) {
	hooks, err := w.queryAll(ctx, runPK(runID), prefHook, false)
	if err != nil {
		return nil, err
	}
	waits, err := w.queryAll(ctx, runPK(runID), prefWait, true)
	if err != nil {
		return nil, err
	}
	ends := &runEndItems{}
	for _, it := range hooks {
		ends.hooks = append(ends.hooks, &world.Hook{HookID: getS(it, aHookID), Token: getS(it, aToken)})
	}
	for _, it := range waits {
		ends.waits = append(ends.waits, getS(it, attrSK)[len(prefWait):])
	}
	return ends, nil
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
