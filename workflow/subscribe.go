package workflow

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"

	"github.com/skeinflow/skein/world"
)

// SubscribeOptions selects what a subscription delivers.
type SubscribeOptions struct {
	// RunID is the run to follow; empty follows every run.
	RunID string
	// Types keeps only events of these types (empty: every event).
	// Snapshots are delivered whatever the types.
	Types []world.EventType
	// Snapshot starts the subscription with the current state: for one
	// run, one Update with the run, its steps, active hooks and waits as
	// they stand, then the events committed after it; for every run, one
	// such Update for each run pending, running or held. It applies only
	// without After (a resumed subscription goes on from its cursor).
	Snapshot bool
	// After resumes from the Cursor of an earlier Update: the events
	// committed after it, none twice and none missed. Empty starts at the
	// run's first event for one run (or after its snapshot), and at the
	// present for every run.
	After string
}

// Update is one message of a subscription: a snapshot or an event, with
// the cursor to resume after it.
type Update struct {
	// Cursor resumes the subscription right after this update
	// (SubscribeOptions.After).
	Cursor string
	// Event is the committed event; nil for a snapshot.
	Event *world.Event
	// Snapshot is a run's state as of its sequence number
	// Snapshot.Run.LastSeq (events up to it are in it); nil for an event.
	Snapshot *world.RunState
}

// Subscription is a live feed of updates (Client.Subscribe). Next and All
// are for one goroutine; Close may be called from any.
type Subscription struct {
	updates iter.Seq2[*Update, error]
	cancel  context.CancelFunc

	mu   sync.Mutex // held by Next while it waits
	next func() (*Update, error, bool)
	stop func()
}

// Subscribe follows runs as they commit: the events of one run, or of
// every run, filtered by type, optionally after a snapshot of the current
// state, from a cursor or from the present (see SubscribeOptions). On a
// World that is a world.Watcher it is pushed or polled the World's way
// (the local world wakes subscribers at every commit); on any other it
// polls through the World's read API.
//
// Ordering: one run's events come in sequence order; across runs the
// World decides (commit order on the local world, none on a polling
// World). A subscription to one run ends (io.EOF) after the run's terminal
// event. An unknown run is an error wrapping world.ErrNotFound, a
// malformed cursor one wrapping world.ErrInvalid, returned by Subscribe or
// by the first Next.
func (c *Client) Subscribe(ctx context.Context, o SubscribeOptions) (*Subscription, error) {
	p := &world.WatchParams{RunID: o.RunID, Types: o.Types, After: o.After}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if o.RunID != "" {
		if _, err := world.ParseRunCursor(o.RunID, o.After); err != nil {
			return nil, err
		}
		if _, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: o.RunID}); err != nil {
			return nil, err
		}
	}
	if o.RunID == "" && o.After == "" && !o.Snapshot {
		// Every run "from now": now is this call, not the first Next.
		cur, err := world.WatchCursor(ctx, c.w, p)
		if err != nil {
			return nil, err
		}
		p.After = cur
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Subscription{updates: c.updates(ctx, p, o.Snapshot && o.After == ""), cancel: cancel}, nil
}

// updates is the feed: the snapshots, then the watch.
func (c *Client) updates(ctx context.Context, p *world.WatchParams, snapshot bool) iter.Seq2[*Update, error] {
	return func(yield func(*Update, error) bool) {
		seen := map[string]int64{} // run -> the sequence number its snapshot covers
		if snapshot {
			snaps, after, err := c.snapshots(ctx, p)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range snaps {
				seen[s.Snapshot.Run.RunID] = s.Snapshot.Run.LastSeq
				if !yield(s, nil) {
					return
				}
			}
			p.After = after
		}
		for e, err := range world.Watch(ctx, c.w, p) {
			if err != nil {
				yield(nil, err)
				return
			}
			if e.Event.Seq <= seen[e.Event.RunID] {
				continue // in the run's snapshot already
			}
			if !yield(&Update{Cursor: e.Cursor, Event: &e.Event}, nil) {
				return
			}
		}
	}
}

// snapshots returns the snapshot updates and the cursor the watch goes on
// from. For every run, the cursor is taken first, so that an event
// committed while the snapshots are read is delivered unless a snapshot
// holds it already.
func (c *Client) snapshots(ctx context.Context, p *world.WatchParams) ([]*Update, string, error) {
	if p.RunID != "" {
		st, err := c.RunState(ctx, p.RunID)
		if err != nil {
			return nil, "", err
		}
		cur := world.RunCursor(p.RunID, st.Run.LastSeq)
		return []*Update{{Cursor: cur, Snapshot: st}}, cur, nil
	}
	cur, err := world.WatchCursor(ctx, c.w, p)
	if err != nil {
		return nil, "", err
	}
	var out []*Update
	for _, status := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld} {
		lp := &world.ListRunsParams{Status: status, Pagination: world.Pagination{Limit: world.MaxPageLimit}}
		for {
			pg, err := c.w.ListRuns(ctx, lp)
			if err != nil {
				return nil, "", err
			}
			for _, r := range pg.Items {
				st, err := c.RunState(ctx, r.RunID)
				if err != nil {
					return nil, "", err
				}
				out = append(out, &Update{Cursor: cur, Snapshot: st})
			}
			if !pg.HasMore || len(pg.Items) == 0 {
				break
			}
			lp.Cursor = pg.Cursor
		}
	}
	return out, cur, nil
}

// RunState returns a run as it stands: the run, every step, its active
// hooks and its waits, folded from its log (world.FoldEvents), so that
// all of it is as of one event, Run.LastSeq.
func (c *Client) RunState(ctx context.Context, runID string) (*world.RunState, error) {
	if _, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil {
		return nil, err
	}
	evs, err := world.EventsAfter(ctx, c.w, runID, 0)
	if err != nil {
		return nil, err
	}
	return world.FoldEvents(evs)
}

// Next returns the next update, waiting for it. It returns io.EOF after
// the last update of a run that has ended, and the context's error once
// the subscription's context is done or it is closed.
func (s *Subscription) Next() (*Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next, s.stop = iter.Pull2(s.updates)
	}
	u, err, ok := s.next()
	switch {
	case !ok:
		return nil, io.EOF
	case err != nil:
		return nil, err
	}
	return u, nil
}

// All yields the updates until the subscription ends: after a finished
// run's terminal event, or with an error (the context's, once it is done
// or the subscription closed). Use either All or Next.
func (s *Subscription) All() iter.Seq2[*Update, error] {
	return func(yield func(*Update, error) bool) {
		for {
			u, err := s.Next()
			if errors.Is(err, io.EOF) || !yield(u, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the subscription; a Next waiting returns. Closing twice is
// not an error.
func (s *Subscription) Close() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
}
