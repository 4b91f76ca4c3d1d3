package dynamoworld

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// Watching (doc.go): a watch.Poller over the World's own reads
// (pollSource): keys-only index queries to list the runs, and eventually
// consistent Queries of a run's partition to read its new commits.

var _ world.Watcher = (*store)(nil)

const (
	// watchBatch is the most commit items one read of a run's partition
	// returns.
	watchBatch = 25
	// allRunsPoll is the shortest wait between two looks of an every-run
	// watch, whose look lists runs (doc.go, Watching).
	allRunsPoll = time.Second
	// watchOverlap is how far back before the last look each look lists
	// new runs (the runs index lags, and other processes' clocks differ).
	watchOverlap = 30 * time.Second
)

// poller returns the Poller of a watch of p: one run looks from
// 50ms to 2s (knobs.WithWatchPoll), every run at most once a second,
// backing off to 5s.
func (w *store) poller(p *world.WatchParams) *watch.Poller {
	lo, hi := w.cfg.watchPollMin, w.cfg.watchPollMax
	if p == nil || p.RunID == "" {
		lo, hi = max(lo, allRunsPoll), max(hi, 5*allRunsPoll)
	}
	return &watch.Poller{Storage: w, Source: pollSource{w}, Now: w.now, PollMin: lo, PollMax: hi, Overlap: watchOverlap}
}

// WatchCursor implements world.Watcher.
func (w *store) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	return w.poller(p).WatchCursor(ctx, p)
}

// Watch implements world.Watcher (doc.go, Watching).
func (w *store) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	return w.poller(p).Watch(ctx, p)
}

// pollSource is the World's watch.PollSource.
type pollSource struct{ w *store }

// PollRuns lists the runs pending, running or held, and those created
// since, with keys-only index queries.
func (s pollSource) PollRuns(ctx context.Context, since time.Time) ([]world.Run, error) {
	refs, err := s.w.activeRuns(ctx)
	if err != nil {
		return nil, err
	}
	recent, err := s.w.indexRuns(ctx, indexAll, attrG1, s.w.shardKeys(g1RunKey), since.UnixNano())
	if err != nil {
		return nil, err
	}
	out := make([]world.Run, 0, len(refs)+len(recent))
	for _, r := range append(refs, recent...) {
		out = append(out, world.Run{RunID: r.id, CreatedAt: time.Unix(0, r.created).UTC()})
	}
	return out, nil
}

// PollRun reads a run's commits: the newest (at.Seq < 0), the one holding
// at.Seq (at.Key < 0), or those after the commit keyed at.Key.
func (s pollSource) PollRun(ctx context.Context, runID string, at watch.PollPos) (*watch.PollRead, error) {
	switch {
	case at.Seq < 0:
		return s.w.pollHead(ctx, runID)
	case at.Key < 0:
		return s.w.pollPlace(ctx, runID, at.Seq)
	}
	return s.w.pollAfter(ctx, runID, at)
}

// pollHead places a watch at the run's newest commit (strongly
// consistent).
func (w *store) pollHead(ctx context.Context, runID string) (*watch.PollRead, error) {
	items, _, err := w.watchQuery(ctx, runID, commitsEnd, true)
	if err != nil || len(items) == 0 {
		return &watch.PollRead{}, err
	}
	ls := getN(items[0], aLastSeq)
	return &watch.PollRead{At: watch.PollPos{Seq: ls, Key: ls}, Rest: !getT(items[0], aDeactivated).IsZero()}, nil
}

// pollPlace places a one-run watch: it reads the commit holding the
// cursor's event (the newest keyed at or before it, strongly consistent)
// and returns what of it follows the cursor.
func (w *store) pollPlace(ctx context.Context, runID string, seq int64) (*watch.PollRead, error) {
	items, _, err := w.watchQuery(ctx, runID, commitSK(seq), true)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		if _, err := w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil {
			return nil, err
		}
		if seq > 0 {
			return nil, invalid("cursor after event %d of run %s, which has none", seq, runID)
		}
		return &watch.PollRead{}, nil
	}
	it := items[0]
	ls := getN(it, aLastSeq)
	if ls < seq {
		return nil, invalid("cursor after event %d of run %s, which has %d", seq, runID, ls)
	}
	evs, err := w.watchDecode(ctx, items)
	if err != nil {
		return nil, err
	}
	if seq == 0 {
		return &watch.PollRead{}, nil // the first look reads the first commit
	}
	key, _ := prevFromSK(getS(it, attrSK))
	rd := &watch.PollRead{At: watch.PollPos{Seq: seq, Key: key}}
	addCommit(rd, evs[0], key, ls)
	return rd, nil
}

// pollAfter reads the commits after the one keyed at.Key, eventually
// consistent, and returns their events while they chain from it (a commit
// visible before the one it follows is read again next time).
func (w *store) pollAfter(ctx context.Context, runID string, at watch.PollPos) (*watch.PollRead, error) {
	items, more, err := w.watchQuery(ctx, runID, commitSK(at.Key), false)
	if err != nil {
		return nil, err
	}
	evs, err := w.watchDecode(ctx, items)
	if err != nil {
		return nil, err
	}
	rd := &watch.PollRead{At: at}
	for i, it := range items {
		prev, ok := prevFromSK(getS(it, attrSK))
		if !ok || prev != rd.At.Key {
			if ok && prev > rd.At.Key && i == 0 {
				// A later commit without the one at the position: not yet
				// visible (this read is eventually consistent), or gone.
				// (After commits read here, the next look, from the
				// position, tells: what was read is delivered first.)
				return rd, w.commitAt(ctx, runID, rd.At.Key, prev)
			}
			return rd, nil // not chained yet: next look
		}
		addCommit(rd, evs[i], prev, getN(it, aLastSeq))
	}
	rd.More = more
	return rd, nil
}

// addCommit adds to rd the events of the commit keyed key, whose last
// event is ls, that follow rd.At, and moves rd.At after the commit.
func addCommit(rd *watch.PollRead, evs []world.Event, key, ls int64) {
	for _, e := range evs {
		if e.Seq <= rd.At.Seq {
			rd.Ended = rd.Ended || e.Type().Terminal()
			rd.Rest = rd.Rest || e.Type() == world.EventRunDeactivated
			continue
		}
		after := watch.PollPos{Seq: e.Seq, Key: key}
		if e.Seq == ls {
			after.Key = ls
		}
		rd.Events = append(rd.Events, e)
		rd.After = append(rd.After, after)
	}
	rd.At = watch.PollPos{Seq: max(rd.At.Seq, ls), Key: ls}
}

// runRef is a run as an index lists it.
type runRef struct {
	id      string
	created int64
}

// indexRuns lists the runs of one index partition, newest first, down to
// the creation time since (Unix nanoseconds; 0: all).
func (w *store) indexRuns(ctx context.Context, index, pkAttr string, pks []string, since int64) ([]runRef, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	var out []runRef
	q := pageQuery{index: index, pkAttr: pkAttr, skAttr: attrGSK, desc: true, limit: world.MaxPageLimit}
	for {
		keys, more, err := w.queryShards(ctx, q, pks)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			g := getS(k, attrGSK)
			created, _ := strconv.ParseInt(g[:min(20, len(g))], 10, 64)
			if created < since {
				return out, nil
			}
			out = append(out, runRef{id: strings.TrimPrefix(getS(k, attrPK), "r#"), created: created})
			q.after = g
		}
		if !more || len(keys) == 0 {
			return out, nil
		}
	}
}

// activeRuns lists the runs pending, running or held.
func (w *store) activeRuns(ctx context.Context) ([]runRef, error) {
	var out []runRef
	for _, st := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld} {
		refs, err := w.indexRuns(ctx, indexStatus, attrG3, w.shardKeys(g3Key(st)), 0)
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	return out, nil
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
