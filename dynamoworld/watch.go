package dynamoworld

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// watchBatch is the most commit items one look reads.
const watchBatch = 25

// allRunsPoll is the shortest wait between two looks of an every-run
// watch, whose look lists runs (doc.go, Watching).
const allRunsPoll = time.Second

// WatchCursor implements world.Watcher.
func (w *store) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	if p.RunID != "" {
		r, err := w.GetRun(ctx, &world.GetRunParams{RunID: p.RunID})
		if err != nil {
			return "", err
		}
		return world.RunCursor(r.RunID, r.LastSeq), nil
	}
	return w.watchAllCursor(ctx)
}

// Watch implements world.Watcher: one run by reading its partition after
// the last commit seen, every run by listing them with keys-only index
// queries and reading each one's partition so (doc.go, Watching).
func (w *store) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	return func(yield func(world.WatchEvent, error) bool) {
		if err := p.Validate(); err != nil {
			yield(world.WatchEvent{}, err)
			return
		}
		var err error
		if p.RunID != "" {
			err = w.watchRun(ctx, p, yield)
		} else {
			err = w.watchAll(ctx, p, yield)
		}
		if err != nil && !errors.Is(err, errWatchStopped) {
			yield(world.WatchEvent{}, err)
		}
	}
}

// errWatchStopped: the consumer stopped.
var errWatchStopped = errors.New("dynamoworld: watch stopped")

// runWatch is the position of a one-run watch: the sequence number
// delivered up to, and the key (the previous sequence number) of the next
// commit to read.
type runWatch struct {
	p     *world.WatchParams
	seq   int64
	next  int64
	ended bool
	yield func(world.WatchEvent, error) bool
}

// deliver yields the events of one commit after the position.
func (rw *runWatch) deliver(evs []world.Event, ls int64) error {
	for _, e := range evs {
		rw.ended = rw.ended || e.Type().Terminal() // a cursor after the end ends the watch too
		if e.Seq <= rw.seq {
			continue
		}
		rw.seq = e.Seq
		if rw.p.Wants(e.Type()) && !rw.yield(world.WatchEvent{Event: e, Cursor: world.RunCursor(rw.p.RunID, e.Seq)}, nil) {
			return errWatchStopped
		}
	}
	rw.next = ls
	return nil
}

func (w *store) watchRun(ctx context.Context, p *world.WatchParams, yield func(world.WatchEvent, error) bool) error {
	seq, err := world.ParseRunCursor(p.RunID, p.After)
	if err != nil {
		return err
	}
	rw := &runWatch{p: p, seq: seq, yield: yield}
	if err := w.watchStart(ctx, rw); err != nil || rw.ended {
		return err
	}
	lo, hi := p.PollMin, p.PollMax
	if lo <= 0 {
		lo = w.cfg.WatchPollMin
	}
	if hi <= 0 {
		hi = w.cfg.WatchPollMax
	}
	delay := lo
	for {
		found, more, err := w.watchLook(ctx, rw)
		if err != nil || rw.ended {
			return err
		}
		if more {
			continue
		}
		if found {
			delay = lo
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if !found {
			delay = min(2*delay, max(hi, lo))
		}
	}
}

// watchStart places a one-run watch: it reads the commit holding the
// cursor's event (the newest keyed at or before it, strongly consistent),
// delivers what of it follows the cursor, and sets the next commit's key.
func (w *store) watchStart(ctx context.Context, rw *runWatch) error {
	items, _, err := w.watchQuery(ctx, rw.p.RunID, commitSK(rw.seq), true)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: rw.p.RunID}); err != nil {
			return err
		}
		if rw.seq > 0 {
			return invalid("cursor after event %d of run %s, which has none", rw.seq, rw.p.RunID)
		}
		return nil
	}
	it := items[0]
	ls := getN(it, aLastSeq)
	if ls < rw.seq {
		return invalid("cursor after event %d of run %s, which has %d", rw.seq, rw.p.RunID, ls)
	}
	evs, err := w.watchDecode(ctx, items)
	if err != nil {
		return err
	}
	if rw.seq == 0 {
		rw.next = 0 // read the first commit in the first look
		return nil
	}
	return rw.deliver(evs[0], ls)
}

// watchLook reads the commits after the position, eventually consistent,
// and delivers them while they chain from it (a commit visible before the
// one it follows is read again next time). more: the look stopped at its
// batch and there is more to read now.
func (w *store) watchLook(ctx context.Context, rw *runWatch) (found, more bool, err error) {
	items, more, err := w.watchQuery(ctx, rw.p.RunID, commitSK(rw.next), false)
	if err != nil {
		return false, false, err
	}
	evs, err := w.watchDecode(ctx, items)
	if err != nil {
		return false, false, err
	}
	for i, it := range items {
		prev, ok := prevFromSK(getS(it, attrSK))
		if !ok || prev != rw.next {
			if ok && prev > rw.next {
				// A later commit without the one at the position: not yet
				// visible (this read is eventually consistent), or gone.
				return found, false, w.commitAt(ctx, rw.p.RunID, rw.next, prev)
			}
			return found, false, nil
		}
		found = true
		if err := rw.deliver(evs[i], getN(it, aLastSeq)); err != nil || rw.ended {
			return found, false, err
		}
	}
	return found, more, nil
}

// watchQuery reads a run's commit items: the newest keyed at or before sk
// (back, strongly consistent, one item), or up to watchBatch from sk on.
func (w *store) watchQuery(ctx context.Context, runID, sk string, back bool) ([]item, bool, error) {
	if err := w.enter(ctx); err != nil {
		return nil, false, err
	}
	defer w.leave()
	e := newExpr()
	kc := e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " + e.n(attrSK)
	limit := int32(watchBatch)
	if back {
		kc += " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(sk))
		limit = 1
	} else {
		kc += " BETWEEN " + e.v(str(sk)) + " AND " + e.v(str(commitsEnd))
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table), KeyConditionExpression: aws.String(kc),
		ScanIndexForward: aws.Bool(!back), ConsistentRead: aws.Bool(back), Limit: aws.Int32(limit),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
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
	return res.Items, len(res.LastEvaluatedKey) > 0, nil
}

// watchDecode decodes commit items into their events, claim-checked
// payloads fetched.
func (w *store) watchDecode(ctx context.Context, items []item) ([][]world.Event, error) {
	fetched, err := w.cc.fetchCommits(ctx, items)
	if err != nil {
		return nil, err
	}
	out := make([][]world.Event, len(items))
	for i, it := range items {
		if out[i], err = decodeCommit(it, fetched); err != nil {
			return nil, err
		}
	}
	return out, nil
}
