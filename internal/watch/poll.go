package watch

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"time"

	"github.com/skeinflow/skein/world"
)

// Poller watches a World by polling: it implements Watcher for a World
// that cannot push. It reads through Source when set (a World with a
// cheaper way to list runs and read a run's new events), otherwise
// through Storage's read API.
//
// One run: each look reads the run's events after the cursor (through the
// read API: its log back from its end, ListEvents newest first, down to
// the cursor, so an idle look is one small read).
//
// Every run: the cursor is a position per run (the runs the watch tracks:
// those not at rest, and those created within Overlap before the last
// look, at rest or not) plus the time of the last look. Each look lists
// the runs pending, running or held and those created since the last look
// minus Overlap (Source.PollRuns; through the read API, ListRuns by status
// and newest first), and reads, in creation order, the new events of each
// of them and of each tracked run not at rest (through the read API, only
// of a run whose LastSeq moved past its position; a tracked run neither
// listing returned is read with GetRun). A run is found as long as it is
// listed within Overlap of the creation time it records: Overlap covers
// the skew between the clocks of the processes that create runs and this
// one, and the lag of an eventually consistent index; a run found later
// than that is delivered from its first event, never skipped. The cursor
// grows with the runs tracked (about 40 bytes each).
//
// The wait between two looks is PollMin after a look that found events
// (none after a look that stopped at a bound of its read: there is more),
// doubling while idle up to PollMax.
type Poller struct {
	Storage world.Storage
	// Source, when set, is what the Poller reads in place of Storage's
	// read API (Storage.GetRun still answers WatchCursor of one run).
	Source PollSource
	// Now is the clock of the looks (default time.Now).
	Now func() time.Time
	// PollMin and PollMax are the default bounds of the wait between two
	// looks (10ms and 1s), for a watch whose WatchParams set none.
	PollMin, PollMax time.Duration
	// Overlap (default 30s) is how far back each look of an every-run watch
	// lists new runs.
	Overlap time.Duration
}

// PollSource is what a Poller reads: a World with reads cheaper than its
// read API for what a watch looks at sets one as Poller.Source.
type PollSource interface {
	// PollRuns returns the runs a look of an every-run watch reads: every
	// run pending, running or held, and every run created at or after
	// since, whatever its status. Only RunID and CreatedAt are read; a run
	// may be returned twice.
	PollRuns(ctx context.Context, since time.Time) ([]world.Run, error)
	// PollRun reads the events of run runID after at.Seq, in sequence
	// order and without gaps; it may return fewer than there are (a read
	// that lags, or stops at a bound: then More). at.Key is where the read
	// starts, a PollPos an earlier read returned; at.Key < 0 places the
	// read at at.Seq (a one-run cursor: ErrNotFound for a run that does
	// not exist), and at.Seq < 0 at the run's last event (no events are
	// returned, only the position).
	PollRun(ctx context.Context, runID string, at PollPos) (*PollRead, error)
}

// PollPos is a position in a run's log: Seq is the sequence number of the
// last event delivered, Key where a PollSource reads on from (its own
// value; 0 with Seq 0 is the run's start).
type PollPos struct {
	Seq, Key int64
}

// PollRead is what one PollSource.PollRun read.
type PollRead struct {
	// Events are the run's events after the position read from, in order.
	Events []world.Event
	// After[i] is the position right after Events[i].
	After []PollPos
	// At is the position after the read: after its last event, or where
	// it was placed.
	At PollPos
	// Ended and Rest report that the run's terminal event, and its
	// run_deactivated, are at or before At.Seq (the Poller also sees them
	// among Events).
	Ended, Rest bool
	// More reports that the read stopped at a bound: there is more to
	// read now.
	More bool
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

func (p *Poller) backoff(wp *world.WatchParams) backoff {
	return newBackoff(wp.PollMin, wp.PollMax, cmp.Or(p.PollMin, 10*time.Millisecond), cmp.Or(p.PollMax, time.Second))
}

// source returns what one watch reads.
func (p *Poller) source() PollSource {
	if p.Source != nil {
		return p.Source
	}
	return &apiSource{s: p.Storage}
}

// WatchCursor implements Watcher.
func (p *Poller) WatchCursor(ctx context.Context, wp *world.WatchParams) (string, error) {
	if err := wp.Validate(); err != nil {
		return "", err
	}
	if wp.RunID != "" {
		r, err := p.Storage.GetRun(ctx, &world.GetRunParams{RunID: wp.RunID})
		if err != nil {
			return "", err
		}
		return world.RunCursor(r.RunID, r.LastSeq), nil
	}
	return p.allCursor(ctx, p.source())
}

// Watch implements Watcher.
func (p *Poller) Watch(ctx context.Context, wp *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	return func(yield func(world.WatchEvent, error) bool) {
		if err := wp.Validate(); err != nil {
			yield(world.WatchEvent{}, err)
			return
		}
		var err error
		if wp.RunID != "" {
			err = p.watchRun(ctx, wp, yield)
		} else {
			err = p.watchAll(ctx, wp, yield)
		}
		if err != nil && !errors.Is(err, errStopped) {
			yield(world.WatchEvent{}, err)
		}
	}
}

// errStopped: the consumer stopped the iteration.
var errStopped = errors.New("watch stopped")

func (p *Poller) watchRun(ctx context.Context, wp *world.WatchParams, yield func(world.WatchEvent, error) bool) error {
	seq, err := world.ParseRunCursor(wp.RunID, wp.After)
	if err != nil {
		return err
	}
	src := p.source()
	rd, err := src.PollRun(ctx, wp.RunID, PollPos{Seq: seq, Key: -1})
	b := p.backoff(wp)
	for placed := true; ; placed = false {
		if err != nil {
			return err
		}
		// What was read with the terminal event (a run_deactivated
		// committed with it) is delivered too, as the Worlds' own watches
		// deliver the end's whole commit.
		ended := rd.Ended
		for _, e := range rd.Events {
			if wp.Wants(e.Type()) && !yield(world.WatchEvent{Event: e, Cursor: world.RunCursor(wp.RunID, e.Seq)}, nil) {
				return errStopped
			}
			ended = ended || e.Type().Terminal()
		}
		if ended {
			return nil
		}
		if !rd.More && !placed { // the first look follows the placing at once
			if err := sleep(ctx, b.next(len(rd.Events) > 0), nil); err != nil {
				return err
			}
		}
		rd, err = src.PollRun(ctx, wp.RunID, rd.At)
	}
}
