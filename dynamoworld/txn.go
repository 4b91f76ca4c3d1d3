package dynamoworld

import (
	"context"
	"errors"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type opKind int

const (
	opPut opKind = iota
	opUpdate
	opDelete
	opCheck
)

// opTag says what a write is for, to read a cancelled transaction's reasons.
type opTag int

const (
	tagOther      opTag = iota
	tagHead             // the run head, created (the run's ID)
	tagFence            // the commit item: the sequence fence
	tagIdem             // a run idempotency key
	tagHookGlobal       // a hook ID, unique across runs
	tagToken            // a hook token claimed for ref (the new hook's ID)
	tagHolder           // a token held by the hook a hook_conflict names (ref: new hook ID)
)

// op is one item write of a transaction. Its condition is kept as a
// function so that ops on one item can be merged (mergeOps) before the
// expressions are rendered.
type op struct {
	key  itemKey
	kind opKind
	tag  opTag
	ref  string
	enc  *encItem       // opPut
	upd  *updateBuilder // opUpdate
	cond func(e *expr) string
}

func (o *op) transactItem(table string) types.TransactWriteItem {
	e := newExpr()
	if o.kind == opUpdate {
		e = o.upd.e
	}
	var cond *string
	if o.cond != nil {
		cond = aws.String(o.cond(e))
	}
	update := ""
	if o.kind == opUpdate {
		update = o.upd.String()
	}
	names, values := e.nameMap(), e.valueMap()
	// The old item is read back only where a failed condition is answered
	// from it: the fence, idempotency keys, tokens.
	rv := types.ReturnValuesOnConditionCheckFailureNone
	switch o.tag {
	case tagFence, tagIdem, tagToken, tagHolder:
		rv = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	switch o.kind {
	case opPut:
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(table), Item: o.enc.it, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: rv,
		}}
	case opUpdate:
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(table), Key: o.key.av(), UpdateExpression: aws.String(update),
			ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: rv,
		}}
	case opDelete:
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(table), Key: o.key.av(), ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: rv,
		}}
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(table), Key: o.key.av(), ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: rv,
	}}
}

func putOp(enc *encItem, tag opTag, ref string, cond func(e *expr) string) *op {
	return &op{key: itemKey{getS(enc.it, attrPK), getS(enc.it, attrSK)}, kind: opPut, tag: tag, ref: ref, enc: enc, cond: cond}
}

func checkOp(k itemKey, tag opTag, ref string, cond func(e *expr) string) *op {
	return &op{key: k, kind: opCheck, tag: tag, ref: ref, cond: cond}
}

func deleteOp(k itemKey, cond func(e *expr) string) *op {
	return &op{key: k, kind: opDelete, cond: cond}
}

func notExists(e *expr) string { return e.notExists() }

// mergeOps makes one op per item, as a transaction requires. A commit can
// touch an item several times (a token claimed, released and claimed again;
// a hook created and disposed): the merged op checks the first op's
// condition, which is about the item as the commit found it, and applies the
// last change. Later conditions are about the commit's own earlier changes,
// which the state machine already judged.
func mergeOps(ops []*op) []*op {
	idx := map[itemKey]int{}
	out := make([]*op, 0, len(ops))
	for _, o := range ops {
		i, seen := idx[o.key]
		if !seen {
			idx[o.key] = len(out)
			out = append(out, o)
			continue
		}
		if o.kind == opCheck {
			continue
		}
		first := out[i]
		m := *o
		m.cond, m.tag, m.ref = first.cond, first.tag, first.ref
		out[i] = &m
	}
	return out
}

// diffPair is an entity written as an update: its encoding before and after.
type diffPair struct {
	base, final *encItem
	tag         opTag
	cond        func(e *expr) string
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// cancelInfo is what a cancelled transaction says, reason by reason.
type cancelInfo struct {
	head, fence, idem, global, other bool // conditions that failed
	fenceItem                        item // the commit found at the fence (ALL_OLD)
	idemRun                          string
	tokens                           map[string]item // token -> its item as found (taken)
	holders                          []string        // tokens whose holder changed
	conflict, throttled              bool
	validation                       string
}

// cancelled reads a TransactionCanceledException; ok is false for other
// errors.
func cancelled(err error, ops []*op) (ci *cancelInfo, ok bool) {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil, false
	}
	ci = &cancelInfo{tokens: map[string]item{}}
	for i, r := range tc.CancellationReasons {
		if i >= len(ops) {
			break
		}
		o := ops[i]
		switch code := aws.ToString(r.Code); code {
		case "", "None":
		case "ConditionalCheckFailed":
			switch o.tag {
			case tagHead:
				ci.head = true
			case tagFence:
				ci.fence = true
				ci.fenceItem = r.Item
			case tagIdem:
				ci.idem = true
				ci.idemRun = getS(r.Item, aRun)
			case tagHookGlobal:
				ci.global = true
			case tagToken:
				ci.tokens[o.ref] = r.Item
			case tagHolder:
				ci.holders = append(ci.holders, o.ref)
			default:
				ci.other = true
			}
		case "TransactionConflict":
			ci.conflict = true
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			ci.throttled = true
		default:
			ci.validation = code + ": " + aws.ToString(r.Message) + " (" + o.key.String() + ")"
		}
	}
	if len(tc.CancellationReasons) == 0 {
		ci.conflict = true
	}
	return ci, true
}

// write runs a transaction; a commit of one item (a serial step's: the
// commit item alone) is that item's own conditional write, half the write
// units of a transaction, its failure reported as a transaction's
// cancellation would be.
func (w *store) write(ctx context.Context, ops []*op) error {
	if len(ops) == 1 && ops[0].kind != opCheck {
		return w.writeOne(ctx, ops[0])
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: make([]types.TransactWriteItem, len(ops))}
	for i, o := range ops {
		in.TransactItems[i] = o.transactItem(w.cfg.Table)
	}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.TransactWriteItems(ctx, in)
	if err != nil {
		return err
	}
	w.countWrite(out.ConsumedCapacity...)
	return nil
}

// writeOne makes one item write outside a transaction. A failed condition
// is returned as a TransactionCanceledException with that one reason
// (ALL_OLD as the transaction's item would return it), so that cancelled
// reads it alike; any other error is of unknown outcome. An SDK retry of a put that
// landed but whose answer was lost fails its own condition: the fence then
// finds this Append's commit (appendState.ours), as after a transaction.
func (w *store) writeOne(ctx context.Context, o *op) error {
	t := o.transactItem(w.cfg.Table)
	rc := types.ReturnConsumedCapacityNone
	if w.capacity {
		rc = types.ReturnConsumedCapacityTotal
	}
	var cc *types.ConsumedCapacity
	var err error
	switch {
	case t.Put != nil:
		var out *dynamodb.PutItemOutput
		out, err = w.ddb.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: t.Put.TableName, Item: t.Put.Item, ConditionExpression: t.Put.ConditionExpression,
			ExpressionAttributeNames: t.Put.ExpressionAttributeNames, ExpressionAttributeValues: t.Put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(t.Put.ReturnValuesOnConditionCheckFailure),
			ReturnConsumedCapacity:              rc,
		})
		if out != nil {
			cc = out.ConsumedCapacity
		}
	case t.Update != nil:
		var out *dynamodb.UpdateItemOutput
		out, err = w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: t.Update.TableName, Key: t.Update.Key, UpdateExpression: t.Update.UpdateExpression,
			ConditionExpression: t.Update.ConditionExpression, ExpressionAttributeNames: t.Update.ExpressionAttributeNames,
			ExpressionAttributeValues:           t.Update.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(t.Update.ReturnValuesOnConditionCheckFailure),
			ReturnConsumedCapacity:              rc,
		})
		if out != nil {
			cc = out.ConsumedCapacity
		}
	default:
		var out *dynamodb.DeleteItemOutput
		out, err = w.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: t.Delete.TableName, Key: t.Delete.Key, ConditionExpression: t.Delete.ConditionExpression,
			ExpressionAttributeNames: t.Delete.ExpressionAttributeNames, ExpressionAttributeValues: t.Delete.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(t.Delete.ReturnValuesOnConditionCheckFailure),
			ReturnConsumedCapacity:              rc,
		})
		if out != nil {
			cc = out.ConsumedCapacity
		}
	}
	if err != nil {
		return asCancellation(err)
	}
	w.countWrite(derefCC(cc)...)
	return nil
}

// asCancellation turns a single write's failed condition into the
// cancellation a transaction of that write would have had.
func asCancellation(err error) error {
	var code string
	var old item
	var cf *types.ConditionalCheckFailedException
	if errorCode(err) != "ConditionalCheckFailedException" {
		// Throttling or a conflict after the SDK's retries: an earlier
		// attempt may have landed with its answer lost (a single write has
		// no request token), so the outcome is unknown.
		return err
	}
	code = "ConditionalCheckFailed"
	if errors.As(err, &cf) {
		old = cf.Item
	}
	return &types.TransactionCanceledException{
		Message:             aws.String(err.Error()),
		CancellationReasons: []types.CancellationReason{{Code: aws.String(code), Item: old}},
	}
}
