package dynamoworld

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// The every-run watch (doc.go, Watching): a position per run, like
// world.Poller's, read with keys-only index queries and one eventually
// consistent Query of each run's partition per look.

// allKind is the cursor kind of an every-run watch.
const allKind = "watch-dynamo"

// watchOverlap is how far back before the last look each look lists new
// runs (the runs index lags, and other processes' clocks differ).
const watchOverlap = 30 * time.Second

// allPos is an every-run position: the time of the last look (T, Unix
// nanoseconds) and per tracked run the last sequence number delivered
// (S), the key of the commit the next look reads from (K), the run's
// creation time (C) and whether it is at rest (E: its run_deactivated is
// behind; until then a run that has ended may still record its rest, its
// compensations included).
type allPos struct {
	T int64             `json:"t"`
	R map[string]allRun `json:"r"`
}

type allRun struct {
	S int64 `json:"s"`
	K int64 `json:"k"`
	C int64 `json:"c"`
	E bool  `json:"e,omitempty"`
}

// runRef is a run as an index lists it.
type runRef struct {
	id      string
	created int64
}

// indexRuns lists the runs of one index partition, newest first, down to
// the creation time since (Unix nanoseconds; 0: all).
func (w *store) indexRuns(ctx context.Context, index, pkAttr, pk string, since int64) ([]runRef, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	var out []runRef
	q := pageQuery{index: index, pkAttr: pkAttr, pk: pk, skAttr: attrGSK, desc: true, limit: world.MaxPageLimit}
	for {
		keys, more, err := w.query(ctx, q)
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
		refs, err := w.indexRuns(ctx, indexStatus, attrG3, "st#"+string(st), 0)
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	return out, nil
}

// watchAllCursor is WatchCursor for every run: each run the first look
// could list (the active ones, and the recent ones, which may have ended)
// at its newest commit.
func (w *store) watchAllCursor(ctx context.Context) (string, error) {
	pos := allPos{T: w.now().UnixNano(), R: map[string]allRun{}}
	refs, err := w.activeRuns(ctx)
	if err != nil {
		return "", err
	}
	recent, err := w.indexRuns(ctx, indexAll, attrG1, g1Run, pos.T-int64(watchOverlap))
	if err != nil {
		return "", err
	}
	for _, r := range append(refs, recent...) {
		if _, ok := pos.R[r.id]; ok {
			continue
		}
		items, _, err := w.watchQuery(ctx, r.id, commitsEnd, true)
		if err != nil {
			return "", err
		}
		t := allRun{C: r.created}
		if len(items) > 0 {
			t.S = getN(items[0], aLastSeq)
			t.K, t.E = t.S, !getT(items[0], aDeactivated).IsZero()
		}
		pos.R[r.id] = t
	}
	return world.EncodeCursor(allKind, pos), nil
}

func (w *store) watchAll(ctx context.Context, p *world.WatchParams, yield func(world.WatchEvent, error) bool) error {
	after := p.After
	if after == "" {
		var err error
		if after, err = w.watchAllCursor(ctx); err != nil {
			return err
		}
	}
	var pos allPos
	if err := world.DecodeCursor(allKind, after, &pos); err != nil {
		return err
	}
	if pos.R == nil {
		pos.R = map[string]allRun{}
	}
	lo, hi := p.PollMin, p.PollMax
	if lo <= 0 {
		lo = max(w.cfg.WatchPollMin, allRunsPoll)
	}
	if hi <= 0 {
		hi = max(w.cfg.WatchPollMax, 5*allRunsPoll)
	}
	delay := lo
	for {
		found, err := w.lookAll(ctx, p, &pos, yield)
		if err != nil {
			return err
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

// allCandidates returns the runs one look reads, in creation order: the
// active ones, those created since the last look minus watchOverlap, and
// the tracked ones whose end is not behind.
func (w *store) allCandidates(ctx context.Context, pos *allPos) ([]runRef, error) {
	byID := map[string]int64{}
	active, err := w.activeRuns(ctx)
	if err != nil {
		return nil, err
	}
	recent, err := w.indexRuns(ctx, indexAll, attrG1, g1Run, pos.T-int64(watchOverlap))
	if err != nil {
		return nil, err
	}
	for _, r := range append(active, recent...) {
		byID[r.id] = r.created
	}
	for id, t := range pos.R {
		if !t.E {
			byID[id] = t.C
		}
	}
	out := make([]runRef, 0, len(byID))
	for id, c := range byID {
		if t, ok := pos.R[id]; !ok || !t.E {
			out = append(out, runRef{id: id, created: c})
		}
	}
	slices.SortFunc(out, func(a, b runRef) int {
		return cmp.Or(cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id))
	})
	return out, nil
}

// lookAll is one look of an every-run watch.
func (w *store) lookAll(ctx context.Context, p *world.WatchParams, pos *allPos, yield func(world.WatchEvent, error) bool) (found bool, err error) {
	start := w.now()
	refs, err := w.allCandidates(ctx, pos)
	if err != nil {
		return false, err
	}
	for _, r := range refs {
		if _, ok := pos.R[r.id]; !ok {
			pos.R[r.id] = allRun{C: r.created} // new: from its first event
		}
		f, err := w.lookRun(ctx, p, pos, r.id, yield)
		found = found || f
		if err != nil {
			return found, err
		}
	}
	pos.T = start.UnixNano()
	for id, t := range pos.R {
		if t.E && t.C < pos.T-int64(watchOverlap) {
			delete(pos.R, id)
		}
	}
	return found, nil
}

// lookRun reads one run's commits from its position and delivers their
// events while they chain.
func (w *store) lookRun(ctx context.Context, p *world.WatchParams, pos *allPos, id string, yield func(world.WatchEvent, error) bool) (found bool, err error) {
	for {
		t := pos.R[id]
		items, more, err := w.watchQuery(ctx, id, commitSK(t.K), false)
		if err != nil {
			return found, err
		}
		evs, err := w.watchDecode(ctx, items)
		if err != nil {
			return found, err
		}
		for i, it := range items {
			prev, ok := prevFromSK(getS(it, attrSK))
			if !ok || prev != t.K {
				return found, nil // not chained yet: next look
			}
			ls := getN(it, aLastSeq)
			for _, e := range evs[i] {
				t.E = t.E || e.Type() == world.EventRunDeactivated
				if e.Seq <= t.S {
					continue
				}
				found = true
				t.S = e.Seq
				if e.Seq == ls {
					t.K = ls
				}
				pos.R[id] = t
				if p.Wants(e.Type()) && !yield(world.WatchEvent{Event: e, Cursor: world.EncodeCursor(allKind, pos)}, nil) {
					return found, errWatchStopped
				}
			}
			t.K = ls
			pos.R[id] = t
		}
		if !more || t.E {
			return found, nil
		}
	}
}
