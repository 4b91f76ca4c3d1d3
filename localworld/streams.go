package localworld

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// Stream read limits.
const (
	DefaultStreamReadLimit = 100
	MaxStreamReadLimit     = 1000
)

// streamMeta is a stream's header as stored: its chunk count (the next
// index) and whether it is closed.
type streamMeta struct {
	Count int64 `json:"count"`
	Done  bool  `json:"done"`
	// Bytes counts what was written (Limits.MaxStreamBytes: each write's
	// DataBytes, without the writer's framing); streams
	// written before it was kept count from 0.
	Bytes int64 `json:"bytes,omitempty"`
}

// Stream names sort as raw bytes after the run, so ListStreams reads them in
// order; chunk indexes are big-endian, so chunks read in index order.
func streamKey(runID, name string) []byte { return newKey().str(runID).raw(name) }

func chunkKey(runID, name string, i int64) []byte { return newKey().str(runID).str(name).seq(i) }

func getStream(tx kvTx, runID, name string) (*streamMeta, error) {
	return getJSON[streamMeta](tx, bStreams, streamKey(runID, name))
}

func putStream(tx kvTx, runID, name string, m *streamMeta) error {
	b, err := encode(m)
	if err != nil {
		return err
	}
	return tx.put(bStreams, streamKey(runID, name), b)
}

func checkStream(runID, name string) error {
	if runID == "" {
		return invalid("stream: run ID required")
	}
	return world.ValidateStreamName(name)
}

// WriteStream appends p.Chunks to a stream at contiguous indexes, in one
// transaction, creating the stream on first write (within
// Limits.MaxStreams). Writing to a closed stream is world.ErrConflict.
func (w *store) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	if p == nil {
		return invalid("nil WriteStreamParams")
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return err
	}
	err := w.update(ctx, func(tx kvTx) error {
		m, err := getStream(tx, p.RunID, p.Name)
		if err != nil {
			return err
		}
		if m == nil {
			if err := w.admitStream(tx, p.RunID, p.Name); err != nil {
				return err
			}
			m = &streamMeta{}
		}
		if m.Done {
			return fmt.Errorf("%w: stream %q of run %s is closed", world.ErrConflict, p.Name, p.RunID)
		}
		n, err := p.DataBytes()
		if err != nil {
			return err
		}
		size := m.Bytes + n
		if limit := w.cfg.Limits.MaxStreamBytes; size > limit {
			return &world.LimitError{RunID: p.RunID, Limit: "stream bytes", Max: limit, Size: size, What: "stream " + p.Name}
		}
		m.Bytes = size
		for i, c := range p.Chunks {
			if err := tx.put(bStreamChunks, chunkKey(p.RunID, p.Name, m.Count+int64(i)), bytes.Clone(c)); err != nil {
				return err
			}
		}
		m.Count += int64(len(p.Chunks))
		return putStream(tx, p.RunID, p.Name, m)
	})
	if err == nil {
		w.streamChanged(p.RunID, p.Name)
	}
	return err
}

// admitStream refuses, with a *world.LimitError, a stream new to its run
// when the run has Limits.MaxStreams streams already. It counts the run's
// streams in the transaction that would create this one (stopping at the
// bound), so writers can never pass it together; a run's existing streams
// cost nothing more.
func (w *store) admitStream(tx kvTx, runID, name string) error {
	limit := w.cfg.Limits.MaxStreams
	n := 0
	prefix := newKey().str(runID)
	err := tx.scan(bStreams, prefix, prefixEnd(prefix), false, func(_, _ []byte) bool {
		n++
		return n < limit
	})
	if err != nil {
		return err
	}
	if n >= limit {
		return &world.LimitError{RunID: runID, Limit: "streams", Max: int64(limit), Size: int64(n) + 1, What: "stream " + name}
	}
	return nil
}

// CloseStream marks a stream done, creating it empty if need be (within
// Limits.MaxStreams, as a write would). Closing a closed stream is not an
// error.
func (w *store) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	if p == nil {
		return invalid("nil CloseStreamParams")
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return err
	}
	var changed bool
	err := w.update(ctx, func(tx kvTx) error {
		changed = false
		m, err := getStream(tx, p.RunID, p.Name)
		if err != nil || (m != nil && m.Done) {
			return err
		}
		if m == nil {
			if err := w.admitStream(tx, p.RunID, p.Name); err != nil {
				return err
			}
			m = &streamMeta{}
		}
		m.Done = true
		changed = true
		return putStream(tx, p.RunID, p.Name, m)
	})
	if err == nil && changed {
		w.streamChanged(p.RunID, p.Name)
	}
	return err
}

// ReadStream returns up to p.Limit chunks (default 100, at most 1000) from
// p.Start; a negative Start counts back from the end as the stream is now.
// A stream that does not exist reads as an empty page that is not done.
func (w *store) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if p == nil {
		return nil, invalid("nil ReadStreamParams")
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return nil, err
	}
	limit := p.Limit
	switch {
	case limit < 0:
		return nil, invalid("negative limit %d", limit)
	case limit == 0:
		limit = DefaultStreamReadLimit
	case limit > MaxStreamReadLimit:
		limit = MaxStreamReadLimit
	}
	var page *world.StreamPage
	err := w.view(ctx, func(tx kvTx) error {
		m, err := getStream(tx, p.RunID, p.Name)
		if err != nil {
			return err
		}
		if m == nil {
			page = &world.StreamPage{Chunks: []world.StreamChunk{}, Next: max(p.Start, 0)}
			return nil
		}
		start := p.Start
		if start < 0 {
			start = max(0, m.Count+start)
		}
		chunks := []world.StreamChunk{}
		if start < m.Count {
			end := min(m.Count, start+int64(limit))
			err = tx.scan(bStreamChunks, chunkKey(p.RunID, p.Name, start), chunkKey(p.RunID, p.Name, end), false, func(_, v []byte) bool {
				chunks = append(chunks, world.StreamChunk{Index: start + int64(len(chunks)), Data: bytes.Clone(v)})
				return true
			})
			if err != nil {
				return err
			}
		}
		next := start + int64(len(chunks))
		page = &world.StreamPage{Chunks: chunks, Next: next, Done: m.Done && next >= m.Count}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// StreamInfo returns the index of a stream's last chunk (-1 when it is empty
// or does not exist) and whether it is closed.
func (w *store) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	if p == nil {
		return nil, invalid("nil StreamInfoParams")
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return nil, err
	}
	info := &world.StreamInfo{TailIndex: -1}
	err := w.view(ctx, func(tx kvTx) error {
		m, err := getStream(tx, p.RunID, p.Name)
		if err != nil || m == nil {
			return err
		}
		info.TailIndex, info.Done = m.Count-1, m.Done
		return nil
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// ListStreams returns the names of a run's streams, sorted.
func (w *store) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	names := []string{}
	prefix := newKey().str(p.RunID)
	err := w.view(ctx, func(tx kvTx) error {
		return tx.scan(bStreams, prefix, prefixEnd(prefix), false, func(k, _ []byte) bool {
			names = append(names, string(k[len(prefix):]))
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// maxStreamWatches bounds the streams StreamChanged keeps a channel for at
// once: an entry lives until the stream's next write or close, which for a
// stream no one writes again (a reader that gave up, a stream of a run at
// rest, or any stream of a ReadOnly World, which takes no writes) is never.
const maxStreamWatches = 4096

// StreamChanged returns a channel closed at the next write to or close of
// the stream (or when the World closes). It implements world.StreamNotifier.
// For a stream already closed the channel is closed at once: nothing will
// change. At most maxStreamWatches (4,096) streams are watched at once;
// beyond that, and on a ReadOnly World (which learns of writes only by
// reading the file), the channel is closed after the watch poll bound (100ms)
// (100ms), so that its reader looks again.
func (w *store) StreamChanged(runID, name string) <-chan struct{} {
	if w.streamDone(runID, name) {
		return w.doneCh
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.Load() {
		return w.closedCh
	}
	k := runID + "\x00" + name
	if ch, ok := w.streamChs[k]; ok {
		return ch
	}
	ch := make(chan struct{})
	if w.cfg.ReadOnly || len(w.streamChs) >= maxStreamWatches {
		time.AfterFunc(w.cfg.watchPollMax, func() { close(ch) })
		return ch
	}
	w.streamChs[k] = ch
	return ch
}

// streamDone reports whether the stream is closed (false when it cannot
// tell).
func (w *store) streamDone(runID, name string) bool {
	var done bool
	_ = w.view(context.Background(), func(tx kvTx) error {
		m, err := getStream(tx, runID, name)
		done = err == nil && m != nil && m.Done
		return nil
	})
	return done
}

// streamChanged wakes the stream's watchers, after the change committed.
func (w *store) streamChanged(runID, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := runID + "\x00" + name
	if ch, ok := w.streamChs[k]; ok {
		close(ch)
		delete(w.streamChs, k)
	}
}
