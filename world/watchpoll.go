package world

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"time"
)

// Poller watches any Storage by polling its read API: it implements
// Watcher for a World that has no cheaper way.
//
// One run: each look reads the run's log back from its end (ListEvents,
// newest first) down to the cursor, so an idle look is one small read.
//
// Every run: the cursor is a position per run (the runs the watch tracks:
// those not finished, and those created within Overlap before the last
// look, finished or not) plus the time of the last look. Each look lists
// the runs pending, running or held (ListRuns by status), the runs created
// since the last look minus Overlap (ListRuns, newest first), and the
// tracked runs neither listing returned (GetRun: a run that ended between
// two looks), and reads the log of each run whose LastSeq moved past its
// position. Runs are read in creation order. A run is found as long as it
// is listed within Overlap of the creation time it records: Overlap covers
// the skew between the clocks of the processes that create runs and this
// one, and the lag of an eventually consistent index; a run found later
// than that is delivered from its first event, never skipped. The cursor
// grows with the runs tracked (about 40 bytes each).
type Poller struct {
	Storage Storage
	// Now is the clock of the looks (default time.Now).
	Now func() time.Time
	// PollMin and PollMax are the default bounds of the wait between two
	// looks (10ms and 1s), for a watch whose WatchParams set none.
	PollMin, PollMax time.Duration
	// Overlap (default 30s) is how far back each look of an every-run watch
	// lists new runs.
	Overlap time.Duration
}

func (p *Poller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Poller) overlap() time.Duration {
	if p.Overlap > 0 {
		return p.Overlap
	}
	return 30 * time.Second
}

func (p *Poller) backoff(wp *WatchParams) backoff {
	return newBackoff(wp.PollMin, wp.PollMax, cmp.Or(p.PollMin, 10*time.Millisecond), cmp.Or(p.PollMax, time.Second))
}

// WatchCursor implements Watcher.
func (p *Poller) WatchCursor(ctx context.Context, wp *WatchParams) (string, error) {
	if err := wp.Validate(); err != nil {
		return "", err
	}
	if wp.RunID != "" {
		r, err := p.Storage.GetRun(ctx, &GetRunParams{RunID: wp.RunID})
		if err != nil {
			return "", err
		}
		return RunCursor(r.RunID, r.LastSeq), nil
	}
	// Every run the first look could list is placed at its newest event:
	// the active ones, and the recent ones, which may have ended.
	now := p.now()
	pos := pollPos{T: now.UnixNano(), R: map[string]pollRun{}}
	runs, err := p.activeRuns(ctx)
	if err != nil {
		return "", err
	}
	err = listRuns(ctx, p.Storage, &ListRunsParams{}, func(r Run) bool {
		if r.CreatedAt.Before(now.Add(-p.overlap())) {
			return false
		}
		runs = append(runs, r)
		return true
	})
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		pos.R[r.RunID] = pollRun{S: r.LastSeq, C: r.CreatedAt.UnixNano(), E: r.Deactivated()}
	}
	return EncodeCursor(pollKind, pos), nil
}

// Watch implements Watcher.
func (p *Poller) Watch(ctx context.Context, wp *WatchParams) iter.Seq2[WatchEvent, error] {
	return func(yield func(WatchEvent, error) bool) {
		if err := wp.Validate(); err != nil {
			yield(WatchEvent{}, err)
			return
		}
		var err error
		if wp.RunID != "" {
			err = p.watchRun(ctx, wp, yield)
		} else {
			err = p.watchAll(ctx, wp, yield)
		}
		if err != nil && !errors.Is(err, errStopped) {
			yield(WatchEvent{}, err)
		}
	}
}

// errStopped: the consumer stopped the iteration.
var errStopped = errors.New("watch stopped")

func (p *Poller) watchRun(ctx context.Context, wp *WatchParams, yield func(WatchEvent, error) bool) error {
	seq, err := ParseRunCursor(wp.RunID, wp.After)
	if err != nil {
		return err
	}
	r, err := p.Storage.GetRun(ctx, &GetRunParams{RunID: wp.RunID})
	if err != nil {
		return err
	}
	if r.Status.Terminal() && seq >= r.LastSeq {
		return nil
	}
	b := p.backoff(wp)
	for {
		evs, err := EventsAfter(ctx, p.Storage, wp.RunID, seq)
		if err != nil {
			return err
		}
		ended := false
		for _, e := range evs {
			seq = e.Seq
			if wp.Wants(e.Type()) && !yield(WatchEvent{Event: e, Cursor: RunCursor(wp.RunID, seq)}, nil) {
				return errStopped
			}
			// What was read with the terminal event (a run_deactivated
			// committed with it) is delivered too, as the Worlds' own
			// watches deliver the end's whole commit.
			ended = ended || e.Type().Terminal()
		}
		if ended {
			return nil
		}
		if err := sleep(ctx, b.next(len(evs) > 0), nil); err != nil {
			return err
		}
	}
}

// EventsAfter reads the events of a run after sequence number seq, in
// order, through ListEvents newest first (so that a look at a run with
// nothing new is one small read).
func EventsAfter(ctx context.Context, s Storage, runID string, seq int64) ([]Event, error) {
	var out []Event
	page := Pagination{Limit: 16, Descending: true}
	for {
		pg, err := s.ListEvents(ctx, &ListEventsParams{RunID: runID, Pagination: page})
		if err != nil {
			return nil, err
		}
		done := !pg.HasMore || len(pg.Items) == 0
		for _, e := range pg.Items {
			if e.Seq <= seq {
				done = true
				break
			}
			out = append(out, e)
		}
		if done {
			break
		}
		page.Cursor, page.Limit = pg.Cursor, MaxPageLimit
	}
	slices.Reverse(out)
	return out, nil
}
