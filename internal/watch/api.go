package watch

import (
	"context"
	"slices"
	"time"

	"github.com/skeinflow/skein/world"
)

// apiSource is the PollSource of a Poller without one: Storage's read
// API. Its PollRuns lists whole runs, so a look reads the events of a
// listed run only when its LastSeq moved past the position; a tracked run
// no listing returned is read with GetRun. A position's Key is its Seq.
// One watch uses one apiSource.
type apiSource struct {
	s world.Storage
	// listed holds the runs the last PollRuns returned, and those read
	// since with GetRun; nil while the watch (of one run) never listed.
	listed map[string]*world.Run
}

// activeStatuses are the statuses of a run that may still append events.
var activeStatuses = []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld}

// PollRuns implements PollSource: ListRuns by status, then newest first
// down to since.
func (a *apiSource) PollRuns(ctx context.Context, since time.Time) ([]world.Run, error) {
	var out []world.Run
	for _, st := range activeStatuses {
		err := listRuns(ctx, a.s, &world.ListRunsParams{Status: st}, func(r world.Run) bool {
			out = append(out, r)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	err := listRuns(ctx, a.s, &world.ListRunsParams{}, func(r world.Run) bool {
		if r.CreatedAt.Before(since) {
			return false
		}
		out = append(out, r)
		return true
	})
	if err != nil {
		return nil, err
	}
	a.listed = make(map[string]*world.Run, len(out))
	for i := range out {
		a.listed[out[i].RunID] = &out[i]
	}
	return out, nil
}

// PollRun implements PollSource.
func (a *apiSource) PollRun(ctx context.Context, runID string, at PollPos) (*PollRead, error) {
	r := a.listed[runID]
	if r == nil && (a.listed != nil || at.Key < 0 || at.Seq < 0) {
		var err error
		if r, err = a.s.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil {
			return nil, err
		}
		if a.listed != nil {
			a.listed[runID] = r
		}
	}
	switch {
	case at.Seq < 0:
		at = PollPos{Seq: r.LastSeq}
	case at.Key < 0:
		at.Key = at.Seq
	case r == nil || r.LastSeq > at.Seq:
		evs, err := EventsAfter(ctx, a.s, runID, at.Seq)
		if err != nil {
			return nil, err
		}
		rd := &PollRead{Events: evs, After: make([]PollPos, len(evs)), At: at}
		for i, e := range evs {
			rd.After[i] = PollPos{Seq: e.Seq, Key: e.Seq}
			rd.At = rd.After[i]
		}
		return rd, nil
	}
	rd := &PollRead{At: PollPos{Seq: at.Seq, Key: at.Seq}}
	rd.Ended = r.Status.Terminal() && at.Seq >= r.LastSeq
	rd.Rest = r.Deactivated() && at.Seq >= r.LastSeq
	return rd, nil
}

// listRuns pages through a listing while fn returns true.
func listRuns(ctx context.Context, s world.Storage, lp *world.ListRunsParams, fn func(world.Run) bool) error {
	lp.Limit = world.MaxPageLimit
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

// EventsAfter reads the events of a run after sequence number seq, in
// order, through ListEvents newest first (so that a look at a run with
// nothing new is one small read).
func EventsAfter(ctx context.Context, s world.Storage, runID string, seq int64) ([]world.Event, error) {
	var out []world.Event
	page := world.Pagination{Limit: 16, Descending: true}
	for {
		pg, err := s.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: page})
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
		page.Cursor, page.Limit = pg.Cursor, world.MaxPageLimit
	}
	slices.Reverse(out)
	return out, nil
}
