package sdk

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
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
// World). A subscription to one run ends (io.EOF) once the run is at
// rest: after its terminal event, the events of what it had under way
// (steps finishing, compensations, the cleanup hook) follow, up to
// run_deactivated (or, for a log that never gets one, such as one written
// by hand, a second after the end once nothing is under way). An unknown run is an error wrapping world.ErrNotFound, a
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
		cur, err := watch.Cursor(ctx, c.w, p)
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
		if p.RunID == "" {
			c.watch(ctx, p, seen, yield)
			return
		}
		// One run: the World's watch up to the run's end, then its rest
		// (steps finishing, compensations, the cleanup) from the log,
		// until run_deactivated.
		run, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: p.RunID})
		if err != nil {
			yield(nil, err)
			return
		}
		if !run.Status.Terminal() && !c.watch(ctx, p, seen, yield) {
			return
		}
		c.followRest(ctx, p, seen, yield)
	}
}

// watch yields the World's watch of p, skipping what the snapshots hold,
// and keeps p.After at the last update's cursor. It reports whether the
// watch ended by itself (a one-run watch, at the run's end) rather than
// by an error or the consumer.
func (c *Client) watch(ctx context.Context, p *world.WatchParams, seen map[string]int64, yield func(*Update, error) bool) bool {
	for e, err := range watch.Watch(ctx, c.w, p) {
		if err != nil {
			yield(nil, err)
			return false
		}
		if e.Event.Seq <= seen[e.Event.RunID] {
			continue // in the run's snapshot already
		}
		p.After = e.Cursor
		if !yield(&Update{Cursor: e.Cursor, Event: &e.Event}, nil) {
			return false
		}
	}
	return true
}

// followRest yields a finished run's events after p.After, read from its
// log every poll interval, until it is at rest: run_deactivated and every
// event before it delivered, or, for a log that never gets one (written by
// hand, or by code older than run_deactivated), nothing under way and no
// new event for restGrace.
func (c *Client) followRest(ctx context.Context, p *world.WatchParams, seen map[string]int64, yield func(*Update, error) bool) {
	seq, err := world.ParseRunCursor(p.RunID, p.After)
	if err != nil {
		yield(nil, err)
		return
	}
	keep := typeSet(p.Types)
	idleSince := time.Now()
	for {
		run, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: p.RunID})
		if err != nil {
			yield(nil, err)
			return
		}
		evs, err := watch.EventsAfter(ctx, c.w, p.RunID, seq)
		if err != nil {
			yield(nil, err)
			return
		}
		for i := range evs {
			ev := &evs[i]
			seq = ev.Seq
			if ev.Seq <= seen[ev.RunID] || (keep != nil && !keep[ev.Type()]) {
				continue
			}
			if !yield(&Update{Cursor: world.RunCursor(p.RunID, ev.Seq), Event: ev}, nil) {
				return
			}
		}
		if run.Deactivated() && seq >= run.LastSeq {
			return
		}
		if len(evs) > 0 {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= restGrace {
			busy, err := c.underWay(ctx, run)
			if err != nil {
				yield(nil, err)
				return
			}
			if !busy {
				return
			}
			idleSince = time.Now()
		}
		select {
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		case <-time.After(c.pollEvery):
		}
	}
}

// typeSet is types as a set, nil for none (every type).
func typeSet(types []world.EventType) map[world.EventType]bool {
	if len(types) == 0 {
		return nil
	}
	m := make(map[world.EventType]bool, len(types))
	for _, t := range types {
		m[t] = true
	}
	return m
}

// restGrace is how long a finished run with nothing under way is watched
// for its run_deactivated before its subscription ends without it (a log
// written by hand, or by code older than run_deactivated, never has one).
const restGrace = time.Second

// AtRest reports whether the run has ended with nothing of it under way
// any more: it is deactivated, or it is finished and has no cleanup
// pending, no compensation running or owed and no step running (a log
// that never gets run_deactivated, such as one written by hand).
func AtRest(ctx context.Context, c *Client, runID string) (bool, error) {
	run, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return false, err
	}
	if run.Deactivated() {
		return true, nil
	}
	if !run.Status.Terminal() {
		return false, nil
	}
	busy, err := c.underWay(ctx, run)
	return !busy, err
}

// underWay reports whether a finished run still has work that will be
// recorded: a pending cleanup, compensations running or owed, or a step
// running.
func (c *Client) underWay(ctx context.Context, run *world.Run) (bool, error) {
	comps := run.Compensations
	if run.Cleanup == world.CleanupPending || comps.Running > 0 || (run.Compensate && comps.Owed > 0) {
		return true, nil
	}
	p := &world.ListStepsParams{RunID: run.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit}}
	for {
		pg, err := c.w.ListSteps(ctx, p)
		if err != nil {
			return false, err
		}
		for _, st := range pg.Items {
			if st.Status == world.StepStatusRunning {
				return true, nil
			}
		}
		if !pg.HasMore || len(pg.Items) == 0 {
			return false, nil
		}
		p.Cursor = pg.Cursor
	}
}

// snapshots returns the snapshot updates and the cursor the watch goes on
// from. For every run, the cursor is taken first, so that an event
// committed while the snapshots are read is delivered unless a snapshot
// holds it already.
func (c *Client) snapshots(ctx context.Context, p *world.WatchParams) ([]*Update, string, error) {
	if p.RunID != "" {
		st, err := RunState(ctx, c, p.RunID)
		if err != nil {
			return nil, "", err
		}
		cur := world.RunCursor(p.RunID, st.Run.LastSeq)
		return []*Update{{Cursor: cur, Snapshot: st}}, cur, nil
	}
	cur, err := watch.Cursor(ctx, c.w, p)
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
				st, err := RunState(ctx, c, r.RunID)
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
func RunState(ctx context.Context, c *Client, runID string) (*world.RunState, error) {
	if _, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil {
		return nil, err
	}
	evs, err := watch.EventsAfter(ctx, c.w, runID, 0)
	if err != nil {
		return nil, err
	}
	return world.FoldEvents(evs)
}

// Next returns the next update, waiting for it. It returns io.EOF after
// the last update of a run that has ended and come to rest, and the context's error once
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
// run's run_deactivated, or with an error (the context's, once it is done
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
