package dynamoworld

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// snapshot is what the World knows of one run as of run.LastSeq: the run and
// the entities of it that it has seen. A present key with a nil value means
// known absent. Every change to a run's entities is an event, and every
// event moves run.LastSeq, so a commit conditioned on run.LastSeq proves the
// whole snapshot still current (the one change without an event, a step
// lease renewal, is guarded separately).
type snapshot struct {
	run   *world.Run
	steps map[string]*world.Step
	waits map[string]*world.Wait
	hooks map[string]*world.Hook // the run's active hooks
	// global holds hook items read by hook ID for hook_created (a hook ID is
	// unique across runs); fresh reads only.
	global map[string]*world.Hook
	// blind: the run was not read but assumed absent (a commit that starts
	// with run_created).
	blind bool
	// complete: the snapshot knows every hook and wait of the run (this
	// World created the run and made every commit since, or folded its
	// whole log), so a run's end needs no query to find them.
	complete bool
	// counted: nHooks and nWaits are the run's active hooks and its waits
	// as of run.LastSeq (the newest commit's nh and nw, or counted by this
	// World since): a run's end needs no query when the snapshot knows as
	// many (knowsAllHooksAndWaits).
	counted        bool
	nHooks, nWaits int
	// streams is what the run head's flag said of the run's streams when
	// read (or written, at run_created); a belief, but at the run's end,
	// which is committed on the condition that the flag still says none
	// when the snapshot believes so: endChecked then records that the run
	// had no stream when it ended (streams.go).
	streams    streamState
	endChecked bool
	// lazy lists the steps that have no item yet, as the newest commit
	// (attribute u) does: step ID -> the key (prev) of the commit that
	// created and started them, whose events are their state. A listed step
	// may have an item after all (a lease renewal writes it): the item wins.
	lazy map[string]int64
	// stepIDs holds every step ID of the run (a superset: IDs are added
	// after their commit lands), when this World created the run and made
	// every commit since; nil otherwise. An ID missing from it is a proof
	// of the step's absence that needs no condition on its item, which is
	// what lets a commit create a step without writing its item.
	stepIDs *idSet
}

// idSet is a grow-only set of step IDs, shared by the snapshots of a run.
type idSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func newIDSet() *idSet { return &idSet{m: map[string]struct{}{}} }

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[id]
	return ok
}

func (s *idSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = struct{}{}
}

// knowsAllHooksAndWaits reports whether the snapshot holds every active
// hook and every wait of the run.
func (s *snapshot) knowsAllHooksAndWaits() bool {
	if s.complete {
		return true
	}
	return s.counted && s.nHooks == live(s.hooks) && s.nWaits == live(s.waits)
}

// live counts the entities of m known present.
func live[V any](m map[string]*V) int {
	n := 0
	for _, v := range m {
		if v != nil {
			n++
		}
	}
	return n
}

// The counts of a run's active hooks and of its waits after a commit, on
// the commit item.
const (
	aActiveHooks = "nh"
	aWaits       = "nw"
)

func setCounts(it item, hooks, waits int) {
	setN(it, aActiveHooks, int64(hooks))
	setN(it, aWaits, int64(waits))
}

// decodeCounts reads a commit item's counts; ok is false for a commit
// without them (written before they existed).
func decodeCounts(it item) (hooks, waits int, ok bool) {
	_, h := it[aActiveHooks]
	_, w := it[aWaits]
	if !h || !w {
		return 0, 0, false
	}
	return int(getN(it, aActiveHooks)), int(getN(it, aWaits)), true
}

func newSnapshot(run *world.Run) *snapshot {
	return &snapshot{
		run: run, steps: map[string]*world.Step{}, waits: map[string]*world.Wait{},
		hooks: map[string]*world.Hook{}, global: map[string]*world.Hook{}, lazy: map[string]int64{},
	}
}

func (s *snapshot) clone() *snapshot {
	c := *s
	c.steps = cloneMap(s.steps)
	c.waits = cloneMap(s.waits)
	c.hooks = cloneMap(s.hooks)
	c.global = map[string]*world.Hook{}
	c.lazy = maps.Clone(s.lazy)
	if c.lazy == nil {
		c.lazy = map[string]int64{}
	}
	return &c
}

func cloneMap[V any](m map[string]*V) map[string]*V {
	out := make(map[string]*V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// maxCachedEntities bounds the entities one cached run keeps; beyond it the
// finished steps are forgotten (and read again if an event names them).
// The bound keeps the copy a commit makes of the snapshot small.
const maxCachedEntities = 64

func (s *snapshot) trim() {
	if len(s.steps)+len(s.waits)+len(s.hooks) <= maxCachedEntities {
		return
	}
	for id, st := range s.steps {
		if st == nil || st.Status.Terminal() {
			delete(s.steps, id)
		}
	}
	for id, w := range s.waits {
		if w == nil {
			delete(s.waits, id)
		}
	}
	for id, h := range s.hooks {
		if h == nil {
			delete(s.hooks, id)
		}
	}
	if len(s.steps)+len(s.waits)+len(s.hooks) > 8*maxCachedEntities {
		// A run with this many live entities: forget them (they are read
		// again when an event names them, and queried at the run's end).
		clear(s.steps)
		clear(s.waits)
		clear(s.hooks)
		s.complete = false
	}
}

// runCache keeps the snapshots of recently written runs (LRU), so that the
// next commit to a run needs no read: one round trip per commit.
type runCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List
	m   map[string]*list.Element
}

type cacheEntry struct {
	runID string
	snap  *snapshot
}

func newRunCache(n int) *runCache {
	return &runCache{max: n, ll: list.New(), m: map[string]*list.Element{}}
}

// get returns the run's snapshot, or nil. Cached snapshots are never
// changed (a commit builds a new one), so the caller must not change it.
func (c *runCache) get(runID string) *snapshot {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[runID]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cacheEntry).snap
}

// put caches s, which the caller must not change afterwards.
func (c *runCache) put(runID string, s *snapshot) { c.store(runID, s, nil) }

// store caches s unless the cache holds a newer snapshot of the run; one as
// new is replaced when replace (nil: always) says so.
func (c *runCache) store(runID string, s *snapshot, replace func(old *snapshot) bool) {
	if c.max <= 0 || s.run == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		old := e.Value.(*cacheEntry).snap
		if old.run != nil && (old.run.LastSeq > s.run.LastSeq || old.run.LastSeq == s.run.LastSeq && replace != nil && !replace(old)) {
			return // a newer snapshot got here first
		}
		s.trim()
		s.global = nil
		s.blind = false
		e.Value.(*cacheEntry).snap = s
		c.ll.MoveToFront(e)
		return
	}
	s.trim()
	s.global = nil
	s.blind = false
	c.m[runID] = c.ll.PushFront(&cacheEntry{runID: runID, snap: s})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*cacheEntry).runID)
	}
}

// putPrimed caches s, a snapshot folded from the run's log (prime.go),
// unless the cache holds a later one or a complete one as new; one as new
// but incomplete is merged into s (snapshot.merge).
func (c *runCache) putPrimed(runID string, s *snapshot) {
	c.store(runID, s, func(old *snapshot) bool {
		if old.complete {
			return false
		}
		s.merge(old)
		return true
	})
}

func (c *runCache) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		c.ll.Remove(e)
		delete(c.m, runID)
	}
}

// setStreams records in the run's cached snapshot that the run has streams
// (this World flagged its head).
func (c *runCache) setStreams(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		ce := e.Value.(*cacheEntry)
		if ce.snap.streams != streamsSome {
			snap := ce.snap.clone()
			snap.streams = streamsSome
			ce.snap = snap
		}
	}
}

// setStep records a step changed outside an event (a lease renewal) in the
// cached snapshot that knows it (copy on write).
func (c *runCache) setStep(st *world.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[st.RunID]; ok {
		ce := e.Value.(*cacheEntry)
		if old, known := ce.snap.steps[st.StepID]; known && old != nil && old.Attempt == st.Attempt {
			snap := ce.snap.clone()
			snap.steps[st.StepID] = st
			delete(snap.lazy, st.StepID) // the renewal wrote its item
			ce.snap = snap
		}
	}
}

// loadKeys lists the entity items a fresh read of a commit's state needs:
// the entity each event names.
func loadKeys(runID string, events []world.EventInput) []itemKey {
	var keys []itemKey
	seen := map[itemKey]bool{}
	for _, in := range events {
		var k itemKey
		switch in.Data.(type) {
		case *world.StepCreated, *world.StepStarted, *world.StepCompleted, *world.StepFailed, *world.StepRetrying:
			k = stepKey(runID, in.CorrelationID)
		case *world.WaitCreated, *world.WaitCompleted:
			k = waitKey(runID, in.CorrelationID)
		case *world.HookCreated:
			k = hookKey(in.CorrelationID)
		case *world.HookReceived, *world.HookDisposed, *world.HookConflict:
			k = hookLinkKey(runID, in.CorrelationID)
		default:
			continue
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
func (w *World) readRun(ctx context.Context, runID string) (*world.Run, error) {
	r, _, _, err := w.readRunAndCommit(ctx, runID)
	return r, err
}

// readRunAndCommit is readRun that also returns the newest commit item and
// the head.
func (w *World) readRunAndCommit(ctx context.Context, runID string) (*world.Run, item, item, error) {
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
func (w *World) runStatus(ctx context.Context, runID string) (status world.RunStatus, found bool, err error) {
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
// consistent Query; head is nil for a run that does not exist.
func (w *World) queryRun(ctx context.Context, runID string) (head, body, last item, err error) {
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
	if head == nil {
		return nil, nil, nil, nil
	}
	if last == nil {
		return nil, nil, nil, fmt.Errorf("dynamoworld: run %s has a head but no commit", runID)
	}
	return head, body, last, nil
}

// load reads a snapshot: the run (readRun), then the entities keys names
// with TransactGetItems. The order makes it safe: the entities are at least
// as new as the run's last sequence number, and any commit after that
// number makes the commit judged on them fail its fence.
func (w *World) load(ctx context.Context, runID string, keys []itemKey) (*snapshot, error) {
	run, last, head, err := w.readRunAndCommit(ctx, runID)
	if err != nil {
		return nil, err
	}
	snap := newSnapshot(run)
	if run == nil {
		snap.counted = true // nothing yet: run_created starts the counts at 0
		return snap, nil
	}
	snap.lazy = decodeLazy(last)
	snap.nHooks, snap.nWaits, snap.counted = decodeCounts(last)
	snap.streams = headStreams(head)
	if len(keys) == 0 {
		return snap, nil
	}
	got := make([]item, len(keys))
	for lo := 0; lo < len(keys); lo += MaxTransactionItems {
		hi := min(len(keys), lo+MaxTransactionItems)
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
	}
	fetched, err := w.cc.fetch(ctx, got...)
	if err != nil {
		return nil, err
	}
	terminal := run.Status.Terminal()
	pending := map[string]int64{} // lazy steps the events name: their state is in a commit
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
				delete(snap.lazy, id)
			} else if _, ok := snap.lazy[id]; ok {
				pending[id] = snap.lazy[id]
				continue
			}
			snap.steps[id] = st
		case k.pk == runPK(runID) && strings.HasPrefix(k.sk, prefWait):
			var wt *world.Wait
			if it != nil && !terminal {
				wt = decodeWait(it)
			}
			snap.waits[k.sk[2:]] = wt
		case k.pk == runPK(runID) && strings.HasPrefix(k.sk, prefHook):
			var h *world.Hook
			if it != nil && !terminal {
				if h, err = decodeHook(it, fetched); err != nil {
					return nil, err
				}
			}
			snap.hooks[k.sk[2:]] = h
		case k.sk == skHook:
			var h *world.Hook
			if it != nil {
				if h, err = decodeHook(it, fetched); err != nil {
					return nil, err
				}
			}
			snap.global[k.pk[2:]] = h
		}
	}
	if len(pending) > 0 {
		steps, err := w.lazySteps(ctx, runID, last, pending)
		if err != nil {
			return nil, err
		}
		for id := range pending {
			snap.steps[id] = steps[id]
		}
	}
	return snap, nil
}
