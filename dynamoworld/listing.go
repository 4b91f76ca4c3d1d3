package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Cursor kinds: the listing a cursor belongs to (world.EncodeCursor checks it).
func eventsKind(runID string) string     { return "events:" + runID }
func corrKind(runID, corr string) string { return "events:" + runID + ":" + corr }
func stepsKind(runID string) string      { return "steps:" + runID }
func hooksKind(runID string) string {
	if runID == "" {
		return "hooks"
	}
	return "hooks:" + runID
}

const runsKind = "runs"

func decodePos[T any](kind, cursor string, valid func(T) bool) (T, error) {
	var pos T
	if cursor == "" {
		return pos, nil
	}
	if err := world.DecodeCursor(kind, cursor, &pos); err != nil {
		return pos, err
	}
	if !valid(pos) {
		return pos, fmt.Errorf("%w: malformed cursor position", world.ErrInvalid)
	}
	return pos, nil
}

func finishPage[T any](items []T, more bool, kind string, pos any) *world.Page[T] {
	p := &world.Page[T]{Items: items, HasMore: more}
	if p.Items == nil {
		p.Items = []T{}
	}
	if len(items) > 0 {
		p.Cursor = world.EncodeCursor(kind, pos)
	}
	return p
}

// ListRuns lists runs newest first through the index for the filter: g4
// (an attribute, see attributes.go), g3 (status), g2 (workflow, with the
// status projected for the combined filter), g1 (all). The indexes hold
// keys only; the runs are then read by key, strongly consistent, and
// checked against the filter again (a GSI lags its table on AWS).
func (w *store) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	if p == nil {
		p = &world.ListRunsParams{}
	}
	if p.Status != "" && !p.Status.Valid() {
		return nil, invalid("unknown run status %q", p.Status)
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	if p.Attribute != nil {
		return w.listRunsByAttribute(ctx, p)
	}
	after, err := decodePos(runsKind, p.Cursor, validGSK)
	if err != nil {
		return nil, err
	}
	q := pageQuery{skAttr: attrGSK, after: after, desc: true, limit: p.EffectiveLimit()}
	var pks []string
	switch {
	case p.WorkflowName != "":
		q.index, q.pkAttr, pks = indexWorkflow, attrG2, w.shardKeys(g2Key(p.WorkflowName))
		if p.Status != "" {
			st := string(p.Status)
			q.filter = func(e *expr) string { return e.n(aStatus) + " = " + e.v(str(st)) }
		}
	case p.Status != "":
		q.index, q.pkAttr, pks = indexStatus, attrG3, w.shardKeys(g3Key(p.Status))
	default:
		q.index, q.pkAttr, pks = indexAll, attrG1, w.shardKeys(g1RunKey)
	}
	keys, more, err := w.queryShards(ctx, q, pks)
	if err != nil {
		return nil, err
	}
	read, err := w.readRuns(ctx, keys)
	if err != nil {
		return nil, err
	}
	runs := make([]world.Run, 0, len(keys))
	last := ""
	for i, k := range keys {
		r := read[i]
		if r == nil {
			continue
		}
		last = getS(k, attrGSK)
		if (p.WorkflowName != "" && r.WorkflowName != p.WorkflowName) || (p.Status != "" && r.Status != p.Status) {
			continue
		}
		runs = append(runs, *r)
	}
	page := finishPage(runs, more, runsKind, last)
	if len(runs) == 0 && more && last != "" {
		page.Cursor = world.EncodeCursor(runsKind, last)
	}
	return page, nil
}

// readRuns reads the runs whose partitions the index items keys name,
// strongly consistent: heads and bodies by BatchGetItem, the newest
// commits by a Query each. A run not found (deleted since the index said
// so) is nil in its place.
func (w *store) readRuns(ctx context.Context, keys []item) ([]*world.Run, error) {
	want := make([]itemKey, 0, 2*len(keys))
	for _, k := range keys {
		pk := getS(k, attrPK)
		want = append(want, itemKey{pk, skRunHead}, itemKey{pk, skRunBody})
	}
	got, err := w.batchGet(ctx, want)
	if err != nil {
		return nil, err
	}
	var bodies []item
	for _, it := range got {
		if getS(it, attrSK) == skRunBody {
			bodies = append(bodies, it)
		}
	}
	fetched, err := w.cc.fetch(ctx, bodies...)
	if err != nil {
		return nil, err
	}
	// LastSeq and UpdatedAt are the newest commit's: one Query a run.
	lasts := make([]item, len(keys))
	err = parallel(ctx, len(keys), 16, func(ctx context.Context, i int) error {
		it, err := w.newestCommit(ctx, getS(keys[i], attrPK))
		lasts[i] = it
		return err
	})
	if err != nil {
		return nil, err
	}
	runs := make([]*world.Run, len(keys))
	for i, k := range keys {
		pk := getS(k, attrPK)
		head := got[itemKey{pk, skRunHead}]
		if head == nil && lasts[i] != nil {
			// The index named the run (its head, or an attribute item,
			// written with the head), and its commits are there.
			if err := w.headless(pk[2:], []item{lasts[i]}); !errors.Is(err, world.ErrGone) {
				return nil, err
			}
		}
		if head == nil || lasts[i] == nil {
			continue
		}
		if endsBeforeHead(head, lasts[i]) {
			// The head and the newest commit were read apart and disagree
			// on the run's end: a commit landed between the reads, or
			// one of them is damaged. One consistent read tells
			// (world.ErrCorrupt when they still disagree).
			if runs[i], err = w.readRun(ctx, pk[2:]); err != nil {
				return nil, err
			}
			continue
		}
		if err := w.requireBody(pk[2:], head, got[itemKey{pk, skRunBody}]); err != nil {
			return nil, err
		}
		if runs[i], err = decodeRun(head, got[itemKey{pk, skRunBody}], lasts[i], fetched); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// newestCommit reads the newest commit item of a run partition (nil if
// none); only its key, counters and run status, not its events.
func (w *store) newestCommit(ctx context.Context, pk string) (item, error) {
	return w.queryNewestCommit(ctx, pk, append([]string{attrPK, attrSK, aLastSeq, aCreated, aRunStatus, attrTTL}, restAttrs()...))
}

// queryNewestCommit reads the newest commit item of the run partition pk,
// strongly consistent, with only the attributes named (all when none); nil
// when the run has no commit.
func (w *store) queryNewestCommit(ctx context.Context, pk string, attrs []string) (item, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(pk)) + " AND " +
			e.n(attrSK) + " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(commitsEnd))),
		ScanIndexForward: aws.Bool(false),
		ConsistentRead:   aws.Bool(true),
		Limit:            aws.Int32(1),
	}
	if len(attrs) > 0 {
		names := make([]string, len(attrs))
		for i, a := range attrs {
			names[i] = e.n(a)
		}
		in.ProjectionExpression = aws.String(strings.Join(names, ", "))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.Query(ctx, in)
	if err != nil {
		return nil, ddbErr("Query", w.cfg.Table, err)
	}
	w.countRead(out.ConsumedCapacity)
	if len(out.Items) == 0 {
		return nil, nil
	}
	if err := w.verified(out.Items[0]); err != nil {
		return nil, err
	}
	return out.Items[0], nil
}

// ListSteps lists a run's steps in step ID order, which is creation order
// for IDs from one monotonic world.IDSource (see doc.go).
func (w *store) ListSteps(ctx context.Context, p *world.ListStepsParams) (*world.Page[world.Step], error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	kind := stepsKind(p.RunID)
	after, err := decodePos(kind, p.Cursor, func(id string) bool { return world.ValidateID(world.PrefixStep, id) == nil })
	if err != nil {
		return nil, err
	}
	// The lazy steps first (lazy.go): the newest commit lists them; then
	// the items. A listed step without an item in the page's range is
	// read from its commit; one written since has its item in the page.
	newest, head, err := w.lastCommitAndHead(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	if head == nil && newest != nil {
		return nil, w.headless(p.RunID, []item{newest})
	}
	lazy := decodeLazy(newest)
	limit := p.EffectiveLimit()
	q := pageQuery{pkAttr: attrPK, pk: runPK(p.RunID), skAttr: attrSK, skPrefix: prefStep, desc: p.Descending, limit: limit}
	if after != "" {
		q.after = prefStep + after
	}
	items, more, err := w.query(ctx, q)
	if err != nil {
		return nil, err
	}
	// A run created with checksums and write marks has them on every
	// item: an item without (written behind the World) is damage.
	if err := w.requireSums(runSummed(head), p.RunID, items...); err != nil {
		return nil, err
	}
	if err := w.requireWriteMarks(head, p.RunID, items...); err != nil {
		return nil, err
	}
	fetched, err := w.cc.fetch(ctx, items...)
	if err != nil {
		return nil, err
	}
	steps := make([]world.Step, 0, len(items))
	for _, it := range items {
		s, err := decodeStep(it, fetched)
		if err != nil {
			return nil, err
		}
		steps = append(steps, *s)
		delete(lazy, s.StepID)
	}
	// before reports whether a sorts before b in the listing's order.
	before := func(a, b string) bool { return a < b != p.Descending && a != b }
	inPage := func(id string) bool {
		switch {
		case after != "" && !before(after, id):
		case more && len(steps) > 0 && !before(id, steps[len(steps)-1].StepID):
		default:
			return true
		}
		return false
	}
	want := map[string]int64{}
	for id, prev := range lazy {
		if inPage(id) {
			want[id] = prev
		}
	}
	// Bare steps (bare.go) are read from the log, when the run may have
	// any: the fold's steps with neither an item nor a place in u.
	var bare []world.Step
	if decodeMayBare(head) {
		f, err := w.foldSteps(ctx, p.RunID, nil, 0)
		if err != nil {
			return nil, w.logGone(err, p.RunID, newest)
		}
		listed := make(map[string]bool, len(steps))
		for _, s := range steps {
			listed[s.StepID] = true
		}
		// The log names every step: a listed item it does not name was
		// not written by a commit (the items were read before the log); a
		// step in the page's range with no item that the log does not
		// leave bare (nor the newest commit list as lazy) lost its item.
		for id := range listed {
			if !f.ids.has(id) {
				return nil, fmt.Errorf("%w: DynamoDB table %s: run %s: step item %s has no events in the run's log", world.ErrCorrupt, w.cfg.Table, p.RunID, id)
			}
		}
		asOf := getN(newest, aLastSeq) // the newest commit (and its list) was read before the items
		for id, st := range f.states {
			_, isLazy := lazy[id]
			switch {
			case isLazy || listed[id] || !inPage(id):
			case f.created[id] > asOf && !f.bare[id]:
				// created since the newest commit was read: the items
				// query may have missed it; the next listing shows it
			case f.bare[id]:
				bare = append(bare, *st)
			default:
				return nil, fmt.Errorf("%w: DynamoDB table %s: run %s: step %s has no item, and the log does not leave it bare", world.ErrCorrupt, w.cfg.Table, p.RunID, id)
			}
		}
	}
	if len(want) > 0 || len(bare) > 0 {
		got, err := w.lazySteps(ctx, p.RunID, newest, want, false, nil)
		if err != nil {
			return nil, err
		}
		for _, st := range got {
			steps = append(steps, *st)
		}
		steps = append(steps, bare...)
		slices.SortFunc(steps, func(a, b world.Step) int {
			switch {
			case a.StepID == b.StepID:
				return 0
			case before(a.StepID, b.StepID):
				return -1
			}
			return 1
		})
		if len(steps) > limit {
			steps, more = steps[:limit], true
		}
	}
	if after == "" && !more {
		if err := w.allSteps(p.RunID, newest, len(steps)); err != nil {
			return nil, err
		}
	}
	last := ""
	if len(steps) > 0 {
		last = steps[len(steps)-1].StepID
	}
	return finishPage(steps, more, kind, last), nil
}

// ListHooks lists active hooks in creation order: a run's from its
// partition (by hook ID), all of them through the g1 index (by creation
// time).
func (w *store) ListHooks(ctx context.Context, p *world.ListHooksParams) (*world.Page[world.Hook], error) {
	if p == nil {
		p = &world.ListHooksParams{}
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	kind := hooksKind(p.RunID)
	var items []item
	var more bool
	if p.RunID != "" {
		after, err := decodePos(kind, p.Cursor, func(id string) bool { return world.ValidateID(world.PrefixHook, id) == nil })
		if err != nil {
			return nil, err
		}
		q := pageQuery{pkAttr: attrPK, pk: runPK(p.RunID), skAttr: attrSK, skPrefix: prefHook, desc: p.Descending, limit: p.EffectiveLimit()}
		if after != "" {
			q.after = prefHook + after
		}
		if items, more, err = w.query(ctx, q); err != nil {
			return nil, err
		}
	} else {
		after, err := decodePos(kind, p.Cursor, validGSK)
		if err != nil {
			return nil, err
		}
		q := pageQuery{index: indexAll, pkAttr: attrG1, skAttr: attrGSK, after: after, desc: p.Descending, limit: p.EffectiveLimit()}
		keys, m, err := w.queryShards(ctx, q, w.shardKeys(g1HookKey))
		if err != nil {
			return nil, err
		}
		more = m
		want := make([]itemKey, len(keys))
		for i, k := range keys {
			want[i] = itemKey{getS(k, attrPK), getS(k, attrSK)}
		}
		got, err := w.batchGet(ctx, want)
		if err != nil {
			return nil, err
		}
		for _, k := range want {
			if it := got[k]; it != nil {
				items = append(items, it)
			}
		}
	}
	fetched, err := w.cc.fetch(ctx, items...)
	if err != nil {
		return nil, err
	}
	hooks := make([]world.Hook, 0, len(items))
	last := ""
	for _, it := range items {
		h, err := decodeHook(it, fetched)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, *h)
		last = h.HookID
		if p.RunID == "" {
			last = gsk(h.CreatedAt, h.HookID)
		}
	}
	return finishPage(hooks, more, kind, last), nil
}

// ListEvents lists a run's events in sequence order (or reverse); the
// cursor is the last sequence number returned.
func (w *store) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.listEventsOnce(ctx, p.RunID, "", p.Pagination, nil)
}

// ListEventsByCorrelation lists the events of one step, hook or wait of a
// run, in sequence order. It reads the run's log with a filter (no index
// is kept for it: that would cost a write per event); RunID is required.
func (w *store) ListEventsByCorrelation(ctx context.Context, p *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	switch {
	case p == nil || p.CorrelationID == "":
		return nil, invalid("correlation ID required")
	case p.RunID == "":
		return nil, invalid("dynamoworld: ListEventsByCorrelation needs a RunID")
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.listEventsOnce(ctx, p.RunID, p.CorrelationID, p.Pagination, nil)
}

// eventPos is an events cursor's position: the sequence number of the last
// event returned and the key of its commit (the run's last sequence number
// before that commit), where the next page starts reading.
type eventPos struct {
	Seq    int64 `json:"s"`
	Commit int64 `json:"c"`
	// Summed: the run's items carry checksums (its head said so on the
	// first page), so every commit of the next pages must have one.
	Summed bool `json:"k,omitempty"`
}

// commitsEnd bounds the commit keys from above ("e#" and 20 digits < "e#:").
const commitsEnd = prefCommit + ":"

// listEvents reads one page of a run's log; the caller has entered the
// World. onCommit, when set, is given each commit item read (after its
// checks) with its key and all its events.
func (w *store) listEvents(ctx context.Context, runID, corr string, pg world.Pagination, onCommit func(prev int64, it item, evs []world.Event)) (*world.Page[world.Event], error) {
	kind := eventsKind(runID)
	if corr != "" {
		kind = corrKind(runID, corr)
	}
	var pos eventPos
	if pg.Cursor != "" {
		var err error
		if pos, err = decodePos(kind, pg.Cursor, func(p eventPos) bool { return p.Seq > 0 && p.Commit >= 0 && p.Commit < p.Seq }); err != nil {
			return nil, err
		}
	}
	limit := pg.EffectiveLimit()
	// A read of the whole log from its start also reads the run's head,
	// which sorts right after the commits, to cache the run (prime.go).
	// A read back from the end brings the cached snapshot forward
	// (rollForward).
	prime := pos.Seq == 0 && !pg.Descending && w.cache.max > 0
	// A read of the whole log from its start, which a commit may be judged
	// on (a prime, or a writer's read), reads the run lease's mark of the
	// log's end beside it (floors.go).
	var floor func() (int64, error)
	if pos.Seq == 0 && !pg.Descending {
		floor = w.readFloor(ctx, runID)
	}
	roll := pos.Seq == 0 && pg.Descending && w.cache.max > 0
	var (
		head    item
		all     []item          // prime, roll: every commit read
		allEvs  [][]world.Event // prime, roll: their events, in order
		reached bool            // the read reached the end of its range
	)
	e := newExpr()
	kc := e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " + e.n(attrSK)
	// The first page also reads the head (it sorts right after the
	// commits: no extra request), which says whether the run's commits
	// must carry checksums.
	switch {
	case pos.Seq == 0:
		kc += " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(skRunHead))
	case pg.Descending:
		kc += " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(commitSK(pos.Commit)))
	default:
		// Up to the head too: the last page checks the log's end against it.
		kc += " BETWEEN " + e.v(str(commitSK(pos.Commit))) + " AND " + e.v(str(skRunHead))
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table), KeyConditionExpression: aws.String(kc),
		ScanIndexForward: aws.Bool(!pg.Descending), ConsistentRead: aws.Bool(true),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	}
	var (
		evs     []world.Event
		commits []int64 // the commit key of each event in evs
		summed  bool    // the run's items carry checksums
		chain   = newLogChain(w.cfg.Table, runID, pg.Descending, pos.Seq == 0, pos.Commit)
		newest  item // the newest commit read (to check against the head)
	)
	for len(evs) <= limit {
		in.Limit = aws.Int32(int32(limit + 1))
		if pos.Seq == 0 && pg.Descending && head == nil {
			in.Limit = aws.Int32(int32(limit + 2)) // the head comes first
		}
		if w.capacity {
			in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		}
		res, err := w.ddb.Query(ctx, in)
		if err != nil {
			return nil, ddbErr("Query", w.cfg.Table, err)
		}
		w.countRead(res.ConsumedCapacity)
		items := res.Items
		if n := len(items); n > 0 && getS(items[n-1], attrSK) == skRunHead {
			head, items = items[n-1], items[:n-1] // ascending: the last
		} else if n > 0 && getS(items[0], attrSK) == skRunHead {
			head, items = items[0], items[1:] // descending: the first
		}
		// A run written with checksums (its head says so, or its first
		// commit has one) has one on every commit.
		summed = summed || pos.Summed || runSummed(head) || firstCommitSummed(items)
		if err := w.requireSums(summed, runID, items...); err != nil {
			return nil, err
		}
		if err := w.verified(append([]item{head}, items...)...); err != nil {
			return nil, err
		}
		fetched, err := w.cc.fetchCommits(ctx, items)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			batch, err := decodeCommit(it, fetched)
			if err != nil {
				return nil, err
			}
			if err := chain.add(it, len(batch)); err != nil {
				return nil, err
			}
			if newest == nil || !pg.Descending {
				newest = it
			}
			if prime {
				all, allEvs = append(all, it), append(allEvs, batch)
			}
			prev, _ := prevFromSK(getS(it, attrSK))
			if onCommit != nil {
				onCommit(prev, it, slices.Clone(batch))
			}
			if pg.Descending {
				if roll {
					all, allEvs = append(all, it), append(allEvs, slices.Clone(batch))
				}
				slices.Reverse(batch)
			}
			for _, ev := range batch {
				switch {
				case pos.Seq > 0 && !pg.Descending && ev.Seq <= pos.Seq,
					pos.Seq > 0 && pg.Descending && ev.Seq >= pos.Seq,
					corr != "" && ev.CorrelationID != corr:
					continue
				}
				evs = append(evs, ev)
				commits = append(commits, prev)
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			reached = true
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	// A read that covered the head's key (descending from the end, or
	// ascending to it) and found commits but no head: the head is missing.
	if head == nil && newest != nil && (reached && !pg.Descending || pos.Seq == 0 && pg.Descending) {
		return nil, w.headless(runID, []item{newest})
	}
	if err := w.checkLogEnd(ctx, runID, chain, reached, head, newest, pg.Descending); err != nil {
		return nil, err
	}
	if floor != nil && reached {
		lq, err := floor()
		if err == nil {
			err = w.checkFloor(ctx, runID, getN(newest, aLastSeq), lq)
		}
		if err != nil {
			return nil, err
		}
	}
	if pg.Descending && pos.Seq == 0 && !reached {
		if err := w.checkLogStart(ctx, runID, chain, head); err != nil {
			return nil, err
		}
	}
	switch {
	case prime && reached:
		w.primeFromLog(runID, all, allEvs, head)
	case roll:
		w.rollForward(runID, all, allEvs)
	}
	more := len(evs) > limit
	if more {
		evs, commits = evs[:limit], commits[:limit]
	}
	var last eventPos
	if len(evs) > 0 {
		last = eventPos{Seq: evs[len(evs)-1].Seq, Commit: commits[len(commits)-1], Summed: summed}
	}
	return finishPage(evs, more, kind, last), nil
}
