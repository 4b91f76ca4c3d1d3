package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// Append applies p.Events to one run in a single TransactWriteItems: get a
// snapshot of the run (the one this World cached at its previous commit,
// else a fresh read), plan the commit on it (planCommit: the items, each
// with its condition, and the next snapshot), write it, and classify the
// outcome. The conditions are the snapshot's assumptions (doc.go,
// Commits): the fence on the run's last sequence number, the absence of
// every item an event creates, a running step's unrenewed lease, a token's
// holder. A cancelled transaction is read reason by reason: a taken run ID
// or idempotency key is the refusal itself; a taken token turns
// hook_created into hook_conflict (or is taken over from a finished run);
// a commit of this Append found at the fence (an answer lost) is reported
// done; anything else means the snapshot was stale, and the commit is
// judged again on a fresh read, so refusals are always those of
// world.Apply on the current state.
func (w *store) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if err := validAppend(p, w.now()); err != nil {
		return nil, err
	}
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	mu := w.runLock(p.RunID)
	mu.Lock()
	defer mu.Unlock()
	a := w.newAppendState(p)
	for iter := 0; iter < 4*maxAppendAttempts && a.contention < maxAppendAttempts; iter++ {
		pd, err := a.plan(ctx)
		if err != nil {
			return nil, err
		}
		switch pd.outcome {
		case planRefused:
			if a.fresh {
				return nil, refusedAt(pd.ref.index, pd.ref.err)
			}
			a.forceRead = true // refused on a cached snapshot: confirm on the current state
			continue
		case planNothing:
			if a.fresh || pd.pl.snap.blind {
				return &world.AppendResult{Run: cloneRun(pd.pl.snap.run), Results: pd.pl.results}, nil
			}
			a.forceRead = true // nothing to write: the answer must come from the current state
			continue
		}
		if res, done, err := a.commit(ctx, pd.pl); done {
			return res, err
		}
	}
	return nil, fmt.Errorf("dynamoworld: append to run %s: gave up after %d attempts under contention: %w", p.RunID, maxAppendAttempts, a.lastErr)
}

// validAppend refuses what no state can make valid: missing events, a
// negative IfLastSeq, an invalid first event (before any state is read,
// exactly as world.Apply would refuse it).
func validAppend(p *world.AppendParams, now time.Time) error {
	switch {
	case p == nil:
		return invalid("nil AppendParams")
	case len(p.Events) == 0:
		return invalid("append to run %q without events", p.RunID)
	case p.IfLastSeq < 0:
		return invalid("negative IfLastSeq %d", p.IfLastSeq)
	}
	first := world.Event{RunID: p.RunID, CorrelationID: p.Events[0].CorrelationID, Data: p.Events[0].Data}
	if _, err := world.Apply(world.State{}, first, now); errors.Is(err, world.ErrInvalid) {
		return err
	}
	return nil
}

// appendState is what one Append carries from attempt to attempt.
type appendState struct {
	w        *store
	p        *world.AppendParams
	eventIDs []string // minted once: a retried commit appends the same events
	tokens   *tokenInfo
	// sent: the commits sent so far, by their time. One whose answer was
	// lost (or turned into a cancellation by a retry) may have landed: the
	// commit found at its fence, with this Append's event IDs, says which.
	sent map[int64]*plan
	// forceRead: the next plan must be made on a fresh read; fresh: the
	// last one was.
	forceRead, fresh bool
	// hint: the step IDs of the snapshot a stale verdict dropped, which a
	// fresh read brings up to date (stepIDsSince) instead of reading the
	// whole log to prove a new step absent.
	hint       *stepHint
	contention int
	lastErr    error
}

func (w *store) newAppendState(p *world.AppendParams) *appendState {
	a := &appendState{
		w: w, p: p, eventIDs: make([]string, len(p.Events)), sent: map[int64]*plan{},
		tokens: &tokenInfo{holders: map[string]*world.Hook{}, stale: map[string]string{}},
	}
	for i := range a.eventIDs {
		a.eventIDs[i] = w.ids.New(world.PrefixEvent)
	}
	return a
}

func (a *appendState) input(snap *snapshot, now time.Time, ends *runEndItems) *planInput {
	return &planInput{
		snap: snap, runID: a.p.RunID, events: a.p.Events, eventIDs: a.eventIDs, now: now, tokens: a.tokens, ends: ends,
		opts: planOptions{lazySteps: a.w.cache.max > 0, retention: a.w.cfg.Retention, cc: a.w.cc, limits: a.w.cfg.Limits},
	}
}

// cached returns the snapshot to plan on without a read: the cached one,
// or a blind one (the run assumed absent) for a commit that creates the
// run; nil when the run must be read.
func (a *appendState) cached() *snapshot {
	if a.forceRead {
		return nil
	}
	snap := a.w.cache.get(a.p.RunID)
	if _, create := a.p.Events[0].Data.(*world.RunCreated); snap == nil && create {
		snap = blindSnapshot()
	}
	if snap != nil && a.p.IfLastSeq > 0 && lastSeqOf(snap.run) != a.p.IfLastSeq {
		return nil
	}
	return snap
}

// plan plans the commit on the cached snapshot when there is one, else (or
// when the planner needs what it does not know) on a fresh read; for a
// run's end it reads the run's hooks and waits when the snapshot does not
// know them all, and plans again.
func (a *appendState) plan(ctx context.Context) (planned, error) {
	now, runID := a.w.now(), a.p.RunID
	a.fresh = false
	snap := a.cached()
	var pd planned
	var err error
	if snap != nil {
		if pd, err = planCommit(a.input(snap, now, nil)); err != nil {
			return planned{}, err
		}
	}
	if snap == nil || pd.outcome == planNeedRead {
		if snap, err = a.w.load(ctx, runID, loadKeys(runID, a.p.Events), a.hint); err != nil {
			return planned{}, err
		}
		if err = a.w.checkMissingHooks(ctx, runID, snap, a.p.Events); err != nil {
			return planned{}, err
		}
		a.fresh, a.forceRead = true, false
		if a.p.IfLastSeq > 0 && lastSeqOf(snap.run) != a.p.IfLastSeq {
			return planned{}, fmt.Errorf("%w: run %s: last sequence is %d, not %d", world.ErrConflict, runID, lastSeqOf(snap.run), a.p.IfLastSeq)
		}
		if pd, err = planCommit(a.input(snap, now, nil)); err != nil {
			return planned{}, err
		}
	}
	if pd.outcome == planNeedEndItems {
		ends, err := a.w.runEndItems(ctx, runID, lastSeqOf(snap.run))
		if err != nil {
			return planned{}, err
		}
		pd, err = planCommit(a.input(snap, now, ends))
		if err != nil {
			return planned{}, err
		}
	}
	if pd.outcome == planNeedRead || pd.outcome == planNeedEndItems {
		return planned{}, fmt.Errorf("dynamoworld: run %s: a commit planned on a fresh read still lacks state", runID)
	}
	return pd, nil
}

// commit uploads the plan's payloads and writes its transaction; done
// reports the Append's end (committed, refused, or failed), otherwise the
// outcome set up the next attempt.
func (a *appendState) commit(ctx context.Context, pl *plan) (res *world.AppendResult, done bool, err error) {
	w := a.w
	if err := w.cc.upload(ctx, pl.uploads); err != nil {
		return nil, true, err
	}
	a.sent[pl.now.UnixNano()] = pl
	werr := w.write(ctx, pl.ops)
	if werr == nil {
		w.committed(ctx, pl)
		return pl.result(), true, nil
	}
	ci, ok := cancelled(werr, pl.ops)
	if !ok {
		// The outcome is unknown (the SDK's own retries, which reuse the
		// request token, are exhausted): forget the snapshot.
		w.cache.drop(a.p.RunID)
		op := "TransactWriteItems"
		if len(pl.ops) == 1 {
			op = "a single-item write"
		}
		return nil, true, ddbErr(op, w.cfg.Table, werr)
	}
	if ci.fence && ci.fenceItem != nil {
		landed, err := w.ours(ctx, ci.fenceItem, a.eventIDs[0], a.sent)
		if err != nil {
			return nil, true, err
		}
		if landed != nil {
			w.committed(ctx, landed)
			return landed.result(), true, nil
		}
	}
	a.lastErr = werr
	return a.retry(ctx, pl, ci, classify(pl, ci))
}

// verdict is what a cancelled transaction means for the Append.
type verdict int

const (
	verdictInvalid   verdict = iota // DynamoDB refused the request itself: an error
	verdictRunExists                // run_created on a taken run ID: the refusal
	verdictIdemTaken                // run_created on a taken idempotency key: the refusal, naming its run
	verdictStale                    // the snapshot was stale: judge again on a fresh read
	verdictTokens                   // a token taken, or its holder changed: judge the tokens, plan again
	verdictTransient                // a conflict or throttling inside the transaction: back off, try again
)

// classify reads a cancelled transaction of plan pl.
func classify(pl *plan, ci *cancelInfo) verdict {
	switch {
	case ci.validation != "":
		return verdictInvalid
	case pl.created && (ci.head || ci.fence):
		return verdictRunExists
	case pl.created && ci.idem:
		return verdictIdemTaken
	case ci.fence || ci.head || ci.other || ci.global || ci.idem:
		return verdictStale
	case len(ci.tokens) > 0 || len(ci.holders) > 0:
		return verdictTokens
	}
	return verdictTransient
}

// retry acts on a verdict: it ends the Append with its refusal or error, or
// sets up the next attempt.
func (a *appendState) retry(ctx context.Context, pl *plan, ci *cancelInfo, v verdict) (*world.AppendResult, bool, error) {
	w, runID := a.w, a.p.RunID
	switch v {
	case verdictInvalid:
		return nil, true, ddbErr("TransactWriteItems", w.cfg.Table, fmt.Errorf("%s: %w", ci.validation, a.lastErr))
	case verdictRunExists:
		return nil, true, &world.RefusalError{Kind: world.ErrConflict, EventType: world.EventRunCreated, Entity: runID, Reason: "run already exists"}
	case verdictIdemTaken:
		holder, err := ci.idemRun, error(nil)
		if holder == "" {
			if holder, err = w.idemHolder(ctx, pl.idemKey); err != nil {
				return nil, true, err
			}
		}
		if holder != "" {
			return nil, true, &world.RefusalError{Kind: world.ErrConflict, EventType: world.EventRunCreated, Entity: holder, Key: pl.idemKey,
				Reason: fmt.Sprintf("idempotency key %q already started run %s", pl.idemKey, holder)}
		}
		a.contention++ // released meanwhile: try again
	case verdictStale:
		// The first time is routine (another writer got there first).
		if old := w.cache.get(runID); old != nil && old.stepIDs != nil && old.run != nil {
			a.hint = &stepHint{ids: old.stepIDs, seq: old.run.LastSeq}
		}
		w.cache.drop(runID)
		a.forceRead = true
		if a.contention++; a.contention > 1 {
			if err := backoff(ctx, a.contention); err != nil {
				return nil, true, err
			}
		}
	case verdictTokens:
		for _, token := range ci.holders {
			delete(a.tokens.holders, token)
		}
		for token, old := range ci.tokens {
			if err := w.judgeToken(ctx, a.tokens, token, old); err != nil {
				return nil, true, err
			}
		}
	case verdictTransient:
		a.contention++
		a.forceRead = a.contention > 3
		if err := backoff(ctx, a.contention); err != nil {
			return nil, true, err
		}
	}
	return nil, false, nil
}

// ours reports which of this Append's commits the commit item found at the
// fence is, if it is one of them: it then carries the Append's first event
// ID, and its time tells the attempt.
func (w *store) ours(ctx context.Context, found item, firstEventID string, sent map[int64]*plan) (*plan, error) {
	if err := w.verified(found); err != nil {
		return nil, err
	}
	fetched, err := w.cc.fetch(ctx, found)
	if err != nil {
		return nil, err
	}
	evs, err := commitEvents(found, fetched)
	if err != nil || len(evs) == 0 || evs[0].ID != firstEventID {
		return nil, err
	}
	pl := sent[evs[0].At]
	if pl == nil {
		return nil, fmt.Errorf("dynamoworld: run %s: a commit of this append landed in an attempt it cannot identify", getS(found, attrPK)[2:])
	}
	return pl, nil
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
func (w *store) idemHolder(ctx context.Context, key string) (string, error) {
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
func (w *store) judgeToken(ctx context.Context, tok *tokenInfo, token string, old item) error {
	holderID, holderRun := getS(old, aHookID), getS(old, aRun)
	if holderID == "" {
		return nil
	}
	if err := w.verified(old); err != nil {
		return err
	}
	if err := w.checkTokenItem(old, token); err != nil {
		return err
	}
	out, err := w.ddb.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(w.cfg.Table), Key: hookKey(holderID).av()}},
		{Get: &types.Get{TableName: aws.String(w.cfg.Table), Key: runHeadKey(holderRun).av()}},
	}})
	if err != nil {
		return ddbErr("TransactGetItems", w.cfg.Table, err)
	}
	hookIt, runIt := out.Responses[0].Item, out.Responses[1].Item
	if err := w.verified(hookIt, runIt); err != nil {
		return err
	}
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

// refusedAt sets the Index of err, the refusal of the commit's event i,
// when it is a *world.RefusalError (a *world.LimitError has none).
func refusedAt(i int, err error) error {
	if re := (*world.RefusalError)(nil); errors.As(err, &re) {
		re.Index = i
	}
	return err
}
