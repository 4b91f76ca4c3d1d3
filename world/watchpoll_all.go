package world

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"
)

// pollKind is the cursor kind of a Poller's every-run watch.
const pollKind = "watch-poll"

// pollPos is a Poller's every-run position: the time of the last look (T,
// Unix nanoseconds) and, per tracked run, the sequence number delivered up
// to (S), its creation time (C) and whether it is at rest (E: its
// run_deactivated is behind; a run that has ended may still record its
// rest, its compensations included, until then).
type pollPos struct {
	T int64              `json:"t"`
	R map[string]pollRun `json:"r"`
}

type pollRun struct {
	S int64 `json:"s"`
	C int64 `json:"c"`
	E bool  `json:"e,omitempty"`
}

func (pos pollPos) encode() string { return EncodeCursor(pollKind, pos) }

// activeStatuses are the statuses of a run that may still append events.
var activeStatuses = []RunStatus{RunStatusPending, RunStatusRunning, RunStatusHeld}

// activeRuns lists the runs pending, running or held.
func (p *Poller) activeRuns(ctx context.Context) ([]Run, error) {
	var out []Run
	for _, st := range activeStatuses {
		err := listRuns(ctx, p.Storage, &ListRunsParams{Status: st}, func(r Run) bool {
			out = append(out, r)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listRuns pages through a listing while fn returns true.
func listRuns(ctx context.Context, s Storage, lp *ListRunsParams, fn func(Run) bool) error {
	lp.Limit = MaxPageLimit
	for {
		pg, err := s.ListRuns(ctx, lp)
		if err != nil {
			return err
		}
		for _, r := range pg.Items {
			if !fn(r) {
				return nil
			}
		}
		if !pg.HasMore || len(pg.Items) == 0 {
			return nil
		}
		lp.Cursor = pg.Cursor
	}
}

func (p *Poller) watchAll(ctx context.Context, wp *WatchParams, yield func(WatchEvent, error) bool) error {
	after := wp.After
	if after == "" {
		var err error
		if after, err = p.WatchCursor(ctx, wp); err != nil {
			return err
		}
	}
	var pos pollPos
	if err := DecodeCursor(pollKind, after, &pos); err != nil {
		return err
	}
	if pos.R == nil {
		pos.R = map[string]pollRun{}
	}
	b := p.backoff(wp)
	for {
		found, err := p.lookAll(ctx, wp, &pos, yield)
		if err != nil {
			return err
		}
		if err := sleep(ctx, b.next(found), nil); err != nil {
			return err
		}
	}
}

// candidates returns the runs one look reads: the active ones, those
// created since cutoff and the tracked ones not yet at rest, in creation
// order.
func (p *Poller) candidates(ctx context.Context, pos *pollPos, cutoff time.Time) ([]Run, error) {
	byID := map[string]Run{}
	active, err := p.activeRuns(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range active {
		byID[r.RunID] = r
	}
	err = listRuns(ctx, p.Storage, &ListRunsParams{}, func(r Run) bool {
		if r.CreatedAt.Before(cutoff) {
			return false
		}
		byID[r.RunID] = r
		return true
	})
	if err != nil {
		return nil, err
	}
	for id, t := range pos.R {
		if _, ok := byID[id]; ok || t.E {
			continue
		}
		r, err := p.Storage.GetRun(ctx, &GetRunParams{RunID: id})
		if errors.Is(err, ErrNotFound) {
			t.E = true // expired (retention) or never there: nothing more comes
			pos.R[id] = t
			continue
		} else if err != nil {
			return nil, err
		}
		byID[id] = *r
	}
	runs := slices.Collect(maps.Values(byID))
	slices.SortFunc(runs, func(a, b Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	})
	return runs, nil
}

// lookAll is one look of an every-run watch: it yields what the runs
// appended since pos and moves pos on. found reports whether any run had
// something new.
func (p *Poller) lookAll(ctx context.Context, wp *WatchParams, pos *pollPos, yield func(WatchEvent, error) bool) (found bool, err error) {
	start := p.now()
	cutoff := time.Unix(0, pos.T).Add(-p.overlap())
	runs, err := p.candidates(ctx, pos, cutoff)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		t, ok := pos.R[r.RunID]
		if !ok {
			t = pollRun{C: r.CreatedAt.UnixNano()}
		}
		if r.LastSeq > t.S {
			evs, err := EventsAfter(ctx, p.Storage, r.RunID, t.S)
			if err != nil {
				return false, err
			}
			for _, e := range evs {
				found = true
				t.S, t.E = e.Seq, t.E || e.Type() == EventRunDeactivated
				pos.R[r.RunID] = t
				if wp.Wants(e.Type()) && !yield(WatchEvent{Event: e, Cursor: pos.encode()}, nil) {
					return found, errStopped
				}
			}
		}
		t.E = t.E || r.Deactivated() && t.S >= r.LastSeq
		pos.R[r.RunID] = t
	}
	// Move the look's time on and forget the runs at rest no listing of new
	// runs can return again.
	pos.T = start.UnixNano()
	next := start.Add(-p.overlap()).UnixNano()
	for id, t := range pos.R {
		if t.E && t.C < next {
			delete(pos.R, id)
		}
	}
	return found, nil
}
