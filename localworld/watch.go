package localworld

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/skeinflow/skein/world"
)

// Watching (world.Watcher): see doc.go.

// allKind is the cursor kind of an every-run watch: the position is the
// number of a commit and the sequence number of the last event of it
// delivered (every commit before it is delivered whole).
const allKind = "watch-local"

type commitPos struct {
	N uint64 `json:"n"`
	S int64  `json:"s"`
}

// commitRec is an entry of the commits bucket: a run and the sequence
// numbers of the events one Append appended to it.
type commitRec struct {
	n           uint64
	runID       string
	first, last int64
}

// putCommit records the commit that took the run from first (nil: absent)
// to run.
func putCommit(tx kvTx, first, run *world.Run) error {
	from := int64(1)
	if first != nil {
		from = first.LastSeq + 1
	}
	n, err := lastCommit(tx)
	if err != nil {
		return err
	}
	return tx.put(bCommits, newKey().u64(n+1), newKey().str(run.RunID).seq(from).seq(run.LastSeq))
}

// lastCommit returns the number of the newest commit (0 when none).
func lastCommit(tx kvTx) (uint64, error) {
	var n uint64
	err := tx.scan(bCommits, nil, nil, true, func(k, _ []byte) bool {
		n, _, _ = readU64(k)
		return false
	})
	return n, err
}

func decodeCommit(k, v []byte) (commitRec, error) {
	n, _, ok1 := readU64(k)
	runID, rest, ok2 := readStr(v)
	first, rest, ok3 := readU64(rest)
	last, _, ok4 := readU64(rest)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return commitRec{}, fmt.Errorf("%w: bucket %s, key %q: malformed commit", ErrCorrupt, bCommits, k)
	}
	return commitRec{n: n, runID: runID, first: int64(first), last: int64(last)}, nil
}

// commitChanged returns the channel closed at the next commit.
func (w *store) commitChanged() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commitCh
}

// signalCommit wakes every watcher.
func (w *store) signalCommit() {
	w.mu.Lock()
	close(w.commitCh)
	w.commitCh = make(chan struct{})
	w.mu.Unlock()
}

// WatchCursor implements world.Watcher: RunCursor of the run's LastSeq for
// one run, the newest commit for every run.
func (w *store) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	if p.RunID != "" {
		r, err := w.GetRun(ctx, &world.GetRunParams{RunID: p.RunID})
		if err != nil {
			return "", err
		}
		return world.RunCursor(r.RunID, r.LastSeq), nil
	}
	var pos commitPos
	err := w.view(ctx, func(tx kvTx) error {
		n, err := lastCommit(tx)
		if err != nil || n == 0 {
			return err
		}
		k := newKey().u64(n)
		v, err := tx.get(bCommits, k)
		if err != nil {
			return err
		}
		c, err := decodeCommit(k, v)
		pos = commitPos{N: c.n, S: c.last}
		return err
	})
	if err != nil {
		return "", err
	}
	return world.EncodeCursor(allKind, pos), nil
}

// Watch implements world.Watcher. Events of one Append reach the watchers
// together, after the Append's transaction is durable.
func (w *store) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	return func(yield func(world.WatchEvent, error) bool) {
		if err := p.Validate(); err != nil {
			yield(world.WatchEvent{}, err)
			return
		}
		next, err := w.watchLook(ctx, p)
		if err != nil {
			yield(world.WatchEvent{}, err)
			return
		}
		wait := w.watchWaiter(p)
		found := false // a look since the last wait found something
		for {
			changed := w.commitChanged()
			evs, moved, done, err := next()
			if err != nil {
				yield(world.WatchEvent{}, err)
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if done {
				return
			}
			if moved {
				found = true
				continue // there may be more; the next look says
			}
			err = wait(ctx, changed, found)
			found = false
			if err != nil {
				yield(world.WatchEvent{}, err)
				return
			}
		}
	}
}

// watchWaiter returns how a watch waits for the next commit: on commitCh,
// or, read-only, on a timer with backoff.
func (w *store) watchWaiter(p *world.WatchParams) func(ctx context.Context, changed <-chan struct{}, found bool) error {
	lo, hi := p.PollMin, p.PollMax
	if lo <= 0 {
		lo = w.cfg.watchPollMin
	}
	if hi <= 0 {
		hi = w.cfg.watchPollMax
	}
	delay := lo
	return func(ctx context.Context, changed <-chan struct{}, found bool) error {
		var tick <-chan time.Time
		if w.cfg.ReadOnly {
			if found {
				delay = lo
			}
			t := time.NewTimer(delay)
			defer t.Stop()
			tick = t.C
			delay = min(2*delay, max(hi, lo))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.closedCh:
			return world.ErrClosed
		case <-changed:
		case <-tick:
		}
		return nil
	}
}
