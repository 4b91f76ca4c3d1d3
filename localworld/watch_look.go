package localworld

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// watchBatch bounds what one look reads: commits of an every-run watch,
// events of a one-run watch.
const watchBatch = 256

// look is one look of a watch: the events after its position, which it
// then moves on; moved reports whether it did (there may be more to read
// at once), done whether the watch is over (one run: its terminal event is
// behind the position).
type look func() (evs []world.WatchEvent, moved, done bool, err error)

// watchLook returns the look of a watch.
func (w *store) watchLook(ctx context.Context, p *world.WatchParams) (look, error) {
	if p.RunID != "" {
		seq, err := world.ParseRunCursor(p.RunID, p.After)
		if err != nil {
			return nil, err
		}
		return func() ([]world.WatchEvent, bool, bool, error) {
			var out []world.WatchEvent
			var done bool
			was := seq
			err := w.view(ctx, func(tx kvTx) error {
				var err error
				out, seq, done, err = runLook(tx, p, seq)
				return err
			})
			return out, seq != was, done, err
		}, nil
	}
	after := p.After
	if after == "" {
		var err error
		if after, err = w.WatchCursor(ctx, p); err != nil {
			return nil, err
		}
	}
	var pos commitPos
	if err := world.DecodeCursor(allKind, after, &pos); err != nil {
		return nil, err
	}
	return func() ([]world.WatchEvent, bool, bool, error) {
		var out []world.WatchEvent
		was := pos
		err := w.view(ctx, func(tx kvTx) error {
			var err error
			out, pos, err = commitsLook(tx, p, pos)
			return err
		})
		return out, pos != was, false, err
	}, nil
}

// runLook reads the run's events after seq.
func runLook(tx kvTx, p *world.WatchParams, seq int64) ([]world.WatchEvent, int64, bool, error) {
	run, err := getRun(tx, p.RunID)
	switch {
	case err != nil:
		return nil, seq, false, err
	case run == nil:
		return nil, seq, false, fmt.Errorf("%w: run %s", world.ErrNotFound, p.RunID)
	}
	evs, err := readEvents(tx, p.RunID, seq+1, min(run.LastSeq, seq+watchBatch))
	if err != nil {
		return nil, seq, false, err
	}
	var out []world.WatchEvent
	for _, e := range evs {
		seq = e.Seq
		if p.Wants(e.Type()) {
			out = append(out, world.WatchEvent{Event: e, Cursor: world.RunCursor(p.RunID, seq)})
		}
	}
	return out, seq, run.Status.Terminal() && seq >= run.LastSeq, nil
}

// commitsLook reads the commits from pos and their events.
func commitsLook(tx kvTx, p *world.WatchParams, pos commitPos) ([]world.WatchEvent, commitPos, error) {
	var recs []commitRec
	var bad error
	err := tx.scan(bCommits, newKey().u64(pos.N), nil, false, func(k, v []byte) bool {
		c, err := decodeCommit(k, v)
		if err != nil {
			bad = err
			return false
		}
		recs = append(recs, c)
		return len(recs) < watchBatch
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, pos, err
	}
	var out []world.WatchEvent
	for _, c := range recs {
		from := c.first
		if c.n == pos.N {
			from = max(from, pos.S+1)
		}
		evs, err := readEvents(tx, c.runID, from, c.last)
		if err != nil {
			return nil, pos, err
		}
		for _, e := range evs {
			pos = commitPos{N: c.n, S: e.Seq}
			if p.Wants(e.Type()) {
				out = append(out, world.WatchEvent{Event: e, Cursor: world.EncodeCursor(allKind, pos)})
			}
		}
		pos = commitPos{N: c.n, S: c.last}
	}
	return out, pos, nil
}

// readEvents reads a run's events from seq first to last, inclusive.
func readEvents(tx kvTx, runID string, first, last int64) ([]world.Event, error) {
	if first > last {
		return nil, nil
	}
	var out []world.Event
	var bad error
	err := tx.scan(bEvents, eventKey(runID, first), eventKey(runID, last+1), false, func(k, v []byte) bool {
		var ev world.Event
		if err := decode(bEvents, k, v, &ev); err != nil {
			bad = err
			return false
		}
		out = append(out, ev)
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}
