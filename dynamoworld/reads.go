package dynamoworld

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// getItem reads one item, strongly consistent; nil when absent.
func (w *store) getItem(ctx context.Context, k itemKey) (item, error) {
	in := &dynamodb.GetItemInput{TableName: aws.String(w.cfg.Table), Key: k.av(), ConsistentRead: aws.Bool(true)}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.GetItem(ctx, in)
	if err != nil {
		return nil, ddbErr("GetItem", w.cfg.Table, err)
	}
	w.countRead(out.ConsumedCapacity)
	if len(out.Item) == 0 {
		return nil, nil
	}
	if err := w.verified(out.Item); err != nil {
		return nil, err
	}
	return out.Item, nil
}

// GetRun returns a run, or world.ErrNotFound: one Query reads its body,
// head and newest commit.
func (w *store) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	r, err := w.readRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: run %s", world.ErrNotFound, p.RunID)
	}
	return r, nil
}

// GetStep returns a step of a run, or world.ErrNotFound.
func (w *store) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	if p == nil || p.RunID == "" || p.StepID == "" {
		return nil, invalid("run and step IDs required")
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	it, err := w.getItem(ctx, stepKey(p.RunID, p.StepID))
	if err != nil {
		return nil, err
	}
	if it == nil {
		// A lazy step (lazy.go) has no item: the newest commit lists it.
		st, found, err := w.readLazyStep(ctx, p.RunID, p.StepID)
		if err != nil || found {
			return st, err
		}
		// Not listed: bare or absent, unless its item was written
		// meanwhile (its first change after the step's commit drops it
		// from the list).
		if it, err = w.getItem(ctx, stepKey(p.RunID, p.StepID)); err != nil {
			return nil, err
		}
		if it == nil {
			st, err := w.bareStep(ctx, p.RunID, p.StepID)
			if err != nil || st != nil {
				return st, err
			}
			return nil, fmt.Errorf("%w: step %s of run %s", world.ErrNotFound, p.StepID, p.RunID)
		}
	}
	if !itemsum.WriteMarked(it) {
		// Items of runs created with write marks all carry them: one
		// without is checked against its run's head (one more read, only
		// for such items).
		_, head, err := w.lastCommitAndHead(ctx, p.RunID)
		if err != nil {
			return nil, err
		}
		if err := w.requireSums(runSummed(head), p.RunID, it); err != nil {
			return nil, err
		}
		if err := w.requireWriteMarks(head, p.RunID, it); err != nil {
			return nil, err
		}
	}
	fetched, err := w.cc.fetch(ctx, it)
	if err != nil {
		return nil, err
	}
	return decodeStep(it, fetched)
}

// GetHook returns an active hook, or world.ErrNotFound.
func (w *store) GetHook(ctx context.Context, p *world.GetHookParams) (*world.Hook, error) {
	if p == nil || p.HookID == "" {
		return nil, invalid("hook ID required")
	}
	return w.readHook(ctx, hookKey(p.HookID), "hook "+p.HookID)
}

// GetHookByToken returns the active hook holding a token, or
// world.ErrNotFound: one read of the token's item, which copies the hook;
// an item that does not hold the token, or whose hook checksum does not
// match, is world.ErrCorrupt (hooktoken.go).
func (w *store) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	if p == nil || p.Token == "" {
		return nil, invalid("token required")
	}
	h, err := w.readHook(ctx, tokenKey(p.Token), "no active hook holds the token")
	if err != nil {
		return nil, err
	}
	if h.Token != p.Token {
		return nil, w.otherToken(tokenKey(p.Token), h.RunID, h.HookID)
	}
	return h, nil
}

func (w *store) readHook(ctx context.Context, k itemKey, what string) (*world.Hook, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	it, err := w.getItem(ctx, k)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, fmt.Errorf("%w: %s", world.ErrNotFound, what)
	}
	fetched, err := w.cc.fetch(ctx, it)
	if err != nil {
		return nil, err
	}
	return decodeHook(it, fetched)
}

// batchGet reads items by key (BatchGetItem, strongly consistent, retrying
// unprocessed keys); absent items are missing from the result map.
func (w *store) batchGet(ctx context.Context, keys []itemKey) (map[itemKey]item, error) {
	out := make(map[itemKey]item, len(keys))
	for lo := 0; lo < len(keys); lo += 100 {
		req := make([]map[string]types.AttributeValue, 0, 100)
		for _, k := range keys[lo:min(len(keys), lo+100)] {
			req = append(req, k.av())
		}
		pending := map[string]types.KeysAndAttributes{w.cfg.Table: {Keys: req, ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return nil, err
				}
			}
			in := &dynamodb.BatchGetItemInput{RequestItems: pending}
			if w.capacity {
				in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
			}
			res, err := w.ddb.BatchGetItem(ctx, in)
			if err != nil {
				return nil, ddbErr("BatchGetItem", w.cfg.Table, err)
			}
			for i := range res.ConsumedCapacity {
				w.countRead(&res.ConsumedCapacity[i])
			}
			if err := w.verified(res.Responses[w.cfg.Table]...); err != nil {
				return nil, err
			}
			for _, it := range res.Responses[w.cfg.Table] {
				out[itemKey{getS(it, attrPK), getS(it, attrSK)}] = it
			}
			pending = res.UnprocessedKeys
		}
	}
	return out, nil
}

// pageQuery is one Query page of a listing: up to limit items after the cursor
// position, plus whether more exist.
type pageQuery struct {
	index    string // "" for the table
	pkAttr   string
	pk       string
	skAttr   string
	skPrefix string // the sort key range: begins with this
	after    string // exclusive start (sort key), "" for the start
	desc     bool
	filter   func(e *expr) string
	limit    int
}

// query reads up to q.limit items, and reports whether there are more.
func (w *store) query(ctx context.Context, q pageQuery) ([]item, bool, error) {
	e := newExpr()
	kc := e.n(q.pkAttr) + " = " + e.v(str(q.pk))
	switch {
	case q.after != "" && q.skPrefix == "" && q.desc:
		kc += " AND " + e.n(q.skAttr) + " < " + e.v(str(q.after))
	case q.after != "" && q.skPrefix == "":
		kc += " AND " + e.n(q.skAttr) + " > " + e.v(str(q.after))
	case q.after != "" && q.desc:
		kc += " AND " + e.n(q.skAttr) + " BETWEEN " + e.v(str(q.skPrefix)) + " AND " + e.v(str(before(q.after)))
	case q.after != "":
		kc += " AND " + e.n(q.skAttr) + " BETWEEN " + e.v(str(q.after+"\x00")) + " AND " + e.v(str(q.skPrefix+"\U0010FFFF"))
	case q.skPrefix != "":
		kc += " AND begins_with(" + e.n(q.skAttr) + ", " + e.v(str(q.skPrefix)) + ")"
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(kc),
		ScanIndexForward:       aws.Bool(!q.desc),
	}
	if q.index != "" {
		in.IndexName = aws.String(q.index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	if q.filter != nil {
		in.FilterExpression = aws.String(q.filter(e))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	var out []item
	for {
		in.Limit = aws.Int32(int32(q.limit + 1 - len(out)))
		if q.filter != nil {
			in.Limit = aws.Int32(int32(max(q.limit+1, 100)))
		}
		if w.capacity {
			in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		}
		res, err := w.ddb.Query(ctx, in)
		if err != nil {
			return nil, false, ddbErr("Query", w.cfg.Table, err)
		}
		w.countRead(res.ConsumedCapacity)
		if err := w.verified(res.Items...); err != nil {
			return nil, false, err
		}
		out = append(out, res.Items...)
		if len(out) > q.limit {
			return out[:q.limit], true, nil
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, false, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// before returns the greatest string below s that the listings can meet:
// the keys compared are ASCII, so dropping the last byte's successor works by
// decrementing it and padding with the highest character.
func before(s string) string {
	if s == "" {
		return ""
	}
	b := []byte(s)
	b[len(b)-1]--
	return string(b) + "\U0010FFFF"
}
