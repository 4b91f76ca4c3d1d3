package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
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

// txn is a commit's writes: those of its transaction, the payloads to
// upload first, and the clean-up of a run's end that did not fit.
type txn struct {
	ops      []*op
	uploads  map[string][]byte
	overflow []*op
}

// build turns a plan into item writes, moving payloads to S3 where needed.
func (w *World) build(ctx context.Context, pl *plan, tok *tokenInfo) (*txn, error) {
	var ttl int64
	if pl.run.Status.Terminal() && w.cfg.Retention > 0 {
		ttl = pl.now.Add(w.cfg.Retention).Unix()
	}
	var (
		puts  []*op
		diffs []*diffPair
		ops   []*op
	)
	// The commit: one item for all its events, keyed by the run's last
	// sequence number before it. attribute_not_exists on that key is the
	// fence: every commit after the snapshot was keyed by the snapshot's
	// last sequence number, so a stale snapshot always collides.
	prev := lastSeqOf(pl.prevRun)
	// Steps: one write each, but none for a step this commit creates and
	// leaves running when its absence is proven (a lazy step, lazy.go).
	pl.lazy = map[string]int64{}
	for id, p := range pl.snap.lazy {
		pl.lazy[id] = p
	}
	var stepPuts []*op
	for _, id := range sortedIDs(pl.steps) {
		c := pl.steps[id]
		_, wasLazy := pl.snap.lazy[id]
		switch {
		case c.final != nil && c.init == nil:
			if !c.assumed && c.final.Status == world.StepStatusRunning && len(pl.lazy) < maxLazySteps && w.cache.max > 0 {
				pl.lazy[id] = prev
				continue
			}
			enc, err := encodeStep(c.final, ttl)
			if err != nil {
				return nil, err
			}
			stepPuts = append(stepPuts, putOp(enc, tagOther, "", notExists))
		case c.final != nil && c.changed() && wasLazy:
			// Its first item: the absence condition also catches a lease
			// renewal, which writes the item.
			enc, err := encodeStep(c.final, ttl)
			if err != nil {
				return nil, err
			}
			stepPuts = append(stepPuts, putOp(enc, tagOther, "", notExists))
			delete(pl.lazy, id)
		case c.final != nil && c.changed():
			base, err := encodeStep(c.init, 0)
			if err != nil {
				return nil, err
			}
			final, err := encodeStep(c.final, ttl)
			if err != nil {
				return nil, err
			}
			d := &diffPair{base: base, final: final}
			if c.leaseGuard {
				lease := c.initLease
				d.cond = func(e *expr) string {
					if lease.IsZero() {
						return "attribute_not_exists(" + e.n(aLeaseExp) + ")"
					}
					return e.n(aLeaseExp) + " = " + e.v(num(lease.UnixNano()))
				}
			}
			diffs = append(diffs, d)
		}
	}
	commit, eventData, err := encodeCommit(w.cc, pl.runID, prev, pl.events, pl.lazy, ttl)
	if err != nil {
		return nil, err
	}
	setS(commit.it, aRunStatus, string(pl.run.Status))
	if pl.nHooks, pl.nWaits, pl.counted = pl.counts(); pl.counted {
		setCounts(commit.it, pl.nHooks, pl.nWaits)
	}
	puts = append(puts, putOp(commit, tagFence, "", func(e *expr) string { return "attribute_not_exists(" + e.n(attrSK) + ")" }))
	// The run: the head changes with the status only, the body at the end.
	pl.streamsChecked = false
	if pl.created {
		head := encodeRunHead(pl.run, ttl)
		if w.registers {
			setN(head.it, aStreams, 0) // no stream yet (streams.go)
			pl.streamsChecked = true
		}
		puts = append(puts, putOp(head, tagHead, "", notExists))
		body, err := encodeRunBody(pl.run, ttl)
		if err != nil {
			return nil, err
		}
		puts = append(puts, putOp(body, tagOther, "", notExists))
		if pl.idemKey != "" {
			e := newEncItem(idemKey(pl.idemKey))
			setS(e.it, aRun, pl.runID)
			setS(e.it, aIdemKey, pl.idemKey)
			if ttl > 0 {
				setN(e.it, attrTTL, ttl)
			}
			puts = append(puts, putOp(e, tagIdem, "", notExists))
		}
	} else {
		d := &diffPair{base: encodeRunHead(pl.prevRun, 0), final: encodeRunHead(pl.run, ttl)}
		if pl.endsRun && pl.snap.streams == streamsNone {
			// The run's end checks the belief that the run has no stream,
			// so that ListStreams can answer from the cache (streams.go).
			d.cond = func(e *expr) string { return e.n(aStreams) + " = " + e.v(num(0)) }
			pl.streamsChecked = true
		}
		diffs = append(diffs, d)
		if pl.endsRun || ttl > 0 {
			base, err := encodeRunBody(pl.prevRun, 0)
			if err != nil {
				return nil, err
			}
			final, err := encodeRunBody(pl.run, ttl)
			if err != nil {
				return nil, err
			}
			diffs = append(diffs, &diffPair{base: base, final: final})
		}
	}
	puts = append(puts, stepPuts...)
	// Waits: one write each.
	for _, id := range sortedIDs(pl.waits) {
		c := pl.waits[id]
		k := waitKey(pl.runID, id)
		switch {
		case c.final != nil && c.init == nil:
			puts = append(puts, putOp(encodeWait(c.final, ttl), tagOther, "", notExists))
		case c.final != nil && c.changed():
			diffs = append(diffs, &diffPair{base: encodeWait(c.init, 0), final: encodeWait(c.final, ttl)})
		case c.final == nil && c.init != nil:
			ops = append(ops, deleteOp(k, nil))
		case c.final == nil && c.assumed:
			ops = append(ops, checkOp(k, tagOther, "", notExists))
		}
	}
	// Hooks, in event order: the global item, the run's link and the token
	// item change together; mergeOps folds repeated changes of one item.
	created := map[string]bool{}
	for _, a := range pl.hookActs {
		switch a.kind {
		case actCreate:
			h := a.hook
			created[h.HookID] = true
			tokenCond := func(e *expr) string { return e.notExists() }
			if stale, ok := tok.stale[h.Token]; ok {
				tokenCond = func(e *expr) string { return e.notExists() + " OR " + e.n(aHookID) + " = " + e.v(str(stale)) }
			}
			ops = append(ops,
				putOp(encodeHook(hookKey(h.HookID), h, true), tagHookGlobal, h.HookID, notExists),
				putOp(encodeHook(hookLinkKey(pl.runID, h.HookID), h, false), tagOther, "", notExists),
				putOp(encodeToken(h), tagToken, h.Token, tokenCond))
		case actConflict:
			if a.assumed {
				ops = append(ops, checkOp(hookKey(a.id), tagHookGlobal, a.id, notExists))
			}
			if !created[a.holder.HookID] {
				holder := a.holder.HookID
				ops = append(ops, checkOp(tokenKey(a.token), tagHolder, a.token, func(e *expr) string {
					return e.n(aHookID) + " = " + e.v(str(holder))
				}))
			}
		case actDispose:
			ops = append(ops, w.hookDeletes(pl.runID, a.hook)...)
		}
	}
	if pl.endsRun && !pl.snap.knowsAllHooksAndWaits() {
		extra, err := w.runEndDeletes(ctx, pl)
		if err != nil {
			return nil, err
		}
		ops = append(ops, extra...)
	}
	// Payloads: decide and apply the claim check on every item written.
	encs := make([]*encItem, 0, len(puts)+len(diffs))
	for _, o := range append(puts, ops...) {
		if o.kind == opPut {
			encs = append(encs, o.enc)
		}
	}
	for _, d := range diffs {
		encs = append(encs, d.final)
	}
	offload, err := w.cc.offloadPlan(encs, maxTransactionBytes)
	if err != nil {
		return nil, err
	}
	t := &txn{uploads: w.cc.apply(pl.runID, encs, offload)}
	for k, b := range eventData {
		t.uploads[k] = b
	}
	var all []*op
	for _, d := range diffs {
		bp, err := w.cc.offloadPlan([]*encItem{d.base}, 0)
		if err != nil {
			return nil, err
		}
		w.cc.apply(pl.runID, []*encItem{d.base}, bp)
		u := diffUpdate(d.base.it, d.final.it)
		if u.empty() {
			continue
		}
		all = append(all, &op{key: itemKey{getS(d.final.it, attrPK), getS(d.final.it, attrSK)}, kind: opUpdate, tag: d.tag, upd: u, cond: d.cond})
	}
	all = append(all, puts...)
	all = mergeOps(append(all, ops...))
	// The core of the commit must fit one transaction; deletions of a run's
	// end that do not fit follow it.
	var core, cleanup []*op
	for _, o := range all {
		if o.kind == opDelete && pl.endsRun && o.tag == tagOther && isCleanup(o.key) {
			cleanup = append(cleanup, o)
		} else {
			core = append(core, o)
		}
	}
	if len(core) > MaxTransactionItems {
		return nil, fmt.Errorf("%w: a commit of %d events to run %s writes %d items; DynamoDB allows %d in one transaction", world.ErrInvalid, len(pl.events), pl.runID, len(core), MaxTransactionItems)
	}
	room := MaxTransactionItems - len(core)
	if len(cleanup) > room {
		t.overflow = cleanup[room:]
		cleanup = cleanup[:room]
	}
	t.ops = append(core, cleanup...)
	return t, nil
}

// counts returns the run's active hooks and waits after the commit: the
// snapshot's, plus those the commit creates, minus those it deletes (none
// after a run's end, which deletes them all); ok is false when the
// snapshot's are unknown.
func (pl *plan) counts() (hooks, waits int, ok bool) {
	if pl.endsRun {
		return 0, 0, true // its end deletes them all
	}
	if !pl.snap.counted {
		return 0, 0, false
	}
	hooks, waits = pl.snap.nHooks, pl.snap.nWaits
	mine := func(h *world.Hook) int {
		if h != nil && h.RunID == pl.runID {
			return 1
		}
		return 0
	}
	for _, c := range pl.hooks {
		hooks += mine(c.final) - mine(c.init)
	}
	for _, c := range pl.waits {
		if c.final != nil {
			waits++
		}
		if c.init != nil {
			waits--
		}
	}
	if hooks < 0 || waits < 0 {
		return 0, 0, false
	}
	return hooks, waits, true
}

// isCleanup reports whether a key is one a run's end deletes: a hook's
// items or a wait.
func isCleanup(k itemKey) bool {
	return k.sk == skHook || k.sk == skToken || strings.HasPrefix(k.sk, prefHook) || strings.HasPrefix(k.sk, prefWait)
}

// hookDeletes disposes of a hook: its global item, its run link and its
// token item (if the token is still the hook's).
func (w *World) hookDeletes(runID string, h *world.Hook) []*op {
	hid := h.HookID
	return []*op{
		deleteOp(hookKey(hid), nil),
		deleteOp(hookLinkKey(runID, hid), nil),
		deleteOp(tokenKey(h.Token), func(e *expr) string {
			return e.notExists() + " OR " + e.n(aHookID) + " = " + e.v(str(hid))
		}),
	}
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

// write runs a transaction.
func (w *World) write(ctx context.Context, ops []*op) error {
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
