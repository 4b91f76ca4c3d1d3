package watch

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// pollKind is the cursor kind of a Poller's every-run watch.
const pollKind = "watch-poll"

// pollPos is a Poller's every-run position: the time of the last look (T,
// Unix nanoseconds) and, per tracked run, the sequence number delivered up
// to (S), where its source reads on from (K), its creation time (C) and
// whether it is at rest (E: its run_deactivated is behind; a run that has
// ended may still record its rest, its compensations included, until
// then).
type pollPos struct {
	T int64              `json:"t"`
	R map[string]pollRun `json:"r"`
}

type pollRun struct {
	S int64 `json:"s"`
	K int64 `json:"k,omitempty"`
	C int64 `json:"c"`
	E bool  `json:"e,omitempty"`
}

func (pos pollPos) encode() string { return world.EncodeCursor(pollKind, pos) }

// allCursor is WatchCursor for every run: each run the first look could
// list (the active ones, and the recent ones, which may have ended) at its
// newest event.
func (p *Poller) allCursor(ctx context.Context, src PollSource) (string, error) {
	now := p.now()
	pos := pollPos{T: now.UnixNano(), R: map[string]pollRun{}}
	runs, err := src.PollRuns(ctx, now.Add(-p.overlap()))
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if _, ok := pos.R[r.RunID]; ok {
			continue
		}
		rd, err := src.PollRun(ctx, r.RunID, PollPos{Seq: -1})
		if err != nil {
			return "", err
		}
		pos.R[r.RunID] = pollRun{S: rd.At.Seq, K: rd.At.Key, C: r.CreatedAt.UnixNano(), E: rd.Rest}
	}
	return pos.encode(), nil
}

func (p *Poller) watchAll(ctx context.Context, wp *world.WatchParams, yield func(world.WatchEvent, error) bool) error {
	src := p.source()
	after := wp.After
	if after == "" {
		var err error
		if after, err = p.allCursor(ctx, src); err != nil {
			return err
		}
	}
	var pos pollPos
	if err := world.DecodeCursor(pollKind, after, &pos); err != nil {
		return err
	}
	if pos.R == nil {
		pos.R = map[string]pollRun{}
	}
	b := p.backoff(wp)
	for {
		found, err := p.lookAll(ctx, src, wp, &pos, yield)
		if err != nil {
			return err
		}
		if err := sleep(ctx, b.next(found), nil); err != nil {
			return err
		}
	}
}

// pollRef is a run one look reads.
type pollRef struct {
	id      string
	created int64
}

// candidates returns the runs one look reads, in creation order: those
// listed (active, or created since cutoff) and the tracked ones not at
// rest.
func (p *Poller) candidates(ctx context.Context, src PollSource, pos *pollPos, cutoff time.Time) ([]pollRef, error) {
	listed, err := src.PollRuns(ctx, cutoff)
	if err != nil {
		return nil, err
	}
	byID := map[string]int64{}
	for _, r := range listed {
		byID[r.RunID] = r.CreatedAt.UnixNano()
	}
	for id, t := range pos.R {
		if !t.E {
			byID[id] = t.C
		}
	}
	out := make([]pollRef, 0, len(byID))
	for id, c := range byID {
		if t, ok := pos.R[id]; !ok || !t.E {
			out = append(out, pollRef{id: id, created: c})
		}
	}
	slices.SortFunc(out, func(a, b pollRef) int {
		return cmp.Or(cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id))
	})
	return out, nil
}

// lookAll is one look of an every-run watch: it yields what the runs
// appended since pos and moves pos on. found reports whether any run had
// something new.
func (p *Poller) lookAll(ctx context.Context, src PollSource, wp *world.WatchParams, pos *pollPos, yield func(world.WatchEvent, error) bool) (found bool, err error) {
	start := p.now()
	refs, err := p.candidates(ctx, src, pos, time.Unix(0, pos.T).Add(-p.overlap()))
	if err != nil {
		return false, err
	}
	for _, r := range refs {
		if _, ok := pos.R[r.id]; !ok {
			pos.R[r.id] = pollRun{C: r.created} // new: from its first event
		}
		f, err := p.lookRun(ctx, src, wp, pos, r.id, yield)
		found = found || f
		if err != nil {
			return found, err
		}
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

// lookRun reads one run's events after its position and delivers them.
func (p *Poller) lookRun(ctx context.Context, src PollSource, wp *world.WatchParams, pos *pollPos, id string, yield func(world.WatchEvent, error) bool) (found bool, err error) {
	for {
		t := pos.R[id]
		rd, err := src.PollRun(ctx, id, PollPos{Seq: t.S, Key: t.K})
		if errors.Is(err, world.ErrNotFound) {
			t.E = true // expired (retention) or never there: nothing more comes
			pos.R[id] = t
			return found, nil
		} else if err != nil {
			return found, err
		}
		for i, e := range rd.Events {
			found = true
			t.S, t.K = rd.After[i].Seq, rd.After[i].Key
			t.E = t.E || e.Type() == world.EventRunDeactivated
			pos.R[id] = t
			if wp.Wants(e.Type()) && !yield(world.WatchEvent{Event: e, Cursor: pos.encode()}, nil) {
				return found, errStopped
			}
		}
		t.S, t.K, t.E = rd.At.Seq, rd.At.Key, t.E || rd.Rest
		pos.R[id] = t
		if !rd.More || t.E {
			return found, nil
		}
	}
}
