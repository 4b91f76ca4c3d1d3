package localworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

var (
	_ world.World          = (*World)(nil)
	_ world.Consumer       = (*World)(nil)
	_ world.StreamNotifier = (*World)(nil)
	_ world.Watcher        = (*World)(nil)
)

// World is the embedded World: storage, queue and streams in one store, a
// log file or memory. It is safe for concurrent use. A file store is used
// by one process at a time (Open takes a lock on it).
//
// Its methods are those of the interfaces it embeds, documented there: a
// world.World, the consumer of its own queue (world.Consumer), a
// world.Watcher whose events are pushed as they commit, and a
// world.StreamNotifier; and the few below. Close stops waiting receivers
// (they return world.ErrClosed), waits for operations in flight and closes
// the store; later calls return world.ErrClosed, and closing twice is not
// an error.
type World struct {
	world.World
	world.Consumer
	world.Watcher
	world.StreamNotifier
	s *store
}

// newWorld is the World of s.
func newWorld(s *store) *World {
	return &World{World: s, Consumer: s, Watcher: s, StreamNotifier: s, s: s}
}

// store is the World's implementation.
type store struct {
	cfg    *Config
	kv     kvStore
	ids    *world.IDSource
	now    func() time.Time
	logger *slog.Logger
	// decoded: the entities the last commits wrote, decoded (decoded.go).
	decoded decodedCache

	// gate lets Close wait for operations in flight; closed refuses new ones.
	gate     sync.RWMutex
	closed   atomic.Bool
	closedCh chan struct{}
	doneCh   chan struct{} // closed at Open: what StreamChanged returns for a closed stream

	mu        sync.Mutex
	queueCh   chan struct{}            // closed and replaced when the queue changes
	commitCh  chan struct{}            // closed and replaced at every commit of events
	streamChs map[string]chan struct{} // closed at the next write or close of a stream
}

// Open opens the World cfg describes: in memory when cfg.Path is empty,
// otherwise the store file at cfg.Path, created if missing.
// An existing file that is truncated, damaged or not a localworld store
// fails with ErrCorrupt and is left untouched (a log whose last record is
// incomplete fails with ErrTornTail unless cfg.RepairTornTail); one held by
// another process fails with ErrLocked. Holding the file, Open expires the
// run and step leases a previous process left (expireStaleLeases) and makes
// visible again the messages it had received and not acknowledged
// (releaseAbandoned). Options are for Skein's own tests.
func Open(cfg Config, opts ...knobs.Option) (*World, error) {
	s, err := open(cfg.withKnobs(knobs.Apply(opts)))
	if err != nil {
		return nil, err
	}
	return newWorld(s), nil
}

// open is Open's store.
func open(cfg Config) (*store, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	w := &store{
		cfg:       c,
		ids:       world.NewIDSource(c.now, c.entropy),
		now:       c.now,
		logger:    c.Logger,
		closedCh:  make(chan struct{}),
		doneCh:    make(chan struct{}),
		queueCh:   make(chan struct{}),
		commitCh:  make(chan struct{}),
		streamChs: make(map[string]chan struct{}),
	}
	close(w.doneCh)
	if c.Path == "" {
		if c.ReadOnly {
			return nil, errors.New("localworld: Config.ReadOnly needs a Path")
		}
		w.kv = newMemStore()
		return w, nil
	}
	if c.ReadOnly {
		return openReadOnly(w, c)
	}
	kv, err := openStore(c)
	if err != nil {
		return nil, err
	}
	w.kv = kv
	// Only a lock that keeps other processes out proves their leases stale
	// (where flock exists).
	if exclusiveLocks {
		if err = w.expireStaleLeases(); err != nil {
			err = fmt.Errorf("expire stale leases: %w", err)
		} else if err = w.releaseAbandoned(); err != nil {
			err = fmt.Errorf("release abandoned messages: %w", err)
		}
	}
	if err != nil {
		_ = kv.close()
		return nil, fmt.Errorf("localworld: open %s: %w", c.Path, err)
	}
	w.logger.LogAttrs(context.Background(), slog.LevelDebug, "localworld: opened", slog.String("path", c.Path),
		slog.String("sync", c.Sync.String()))
	return w, nil
}

// Path returns the store file, or "" in memory.
func (w *World) Path() string { return w.s.cfg.Path }

// Limits returns the limits the World enforces on every run (Config.Limits
// with defaults).
func (w *World) Limits() world.Limits { return w.s.cfg.Limits }

// Limits is World.Limits.
func (w *store) Limits() world.Limits { return w.cfg.Limits }

// Close stops waiting receivers (they return world.ErrClosed), waits for
// operations in flight and closes the store. Later calls return
// world.ErrClosed. Closing twice is not an error.
func (w *store) Close() error {
	if !w.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(w.closedCh)
	w.mu.Lock()
	for k, ch := range w.streamChs {
		close(ch)
		delete(w.streamChs, k)
	}
	w.mu.Unlock()
	w.gate.Lock()
	defer w.gate.Unlock()
	if err := w.kv.close(); err != nil {
		return fmt.Errorf("localworld: close %s: %w", w.cfg.Path, err)
	}
	w.logger.LogAttrs(context.Background(), slog.LevelDebug, "localworld: closed", slog.String("path", w.cfg.Path))
	return nil
}

// enter admits an operation, or reports that the World is closed. Every
// successful enter is paired with leave.
func (w *store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.gate.RLock()
	if w.closed.Load() {
		w.gate.RUnlock()
		return world.ErrClosed
	}
	return nil
}

func (w *store) leave() { w.gate.RUnlock() }

// view and update run a transaction inside the gate, mapping store errors.
func (w *store) view(ctx context.Context, fn func(kvTx) error) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.storeErr(w.kv.view(fn))
}

func (w *store) update(ctx context.Context, fn func(kvTx) error) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.storeErr(w.kv.update(fn))
}

func (w *store) storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errStoreClosed):
		return world.ErrClosed
	case errors.Is(err, errKeyTooLarge):
		return fmt.Errorf("%w: a name, key or token is longer than %d bytes", world.ErrInvalid, maxKeySize)
	}
	return err
}

// queueChanged returns the channel closed at the next queue change.
func (w *store) queueChanged() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queueCh
}

// signalQueue wakes every waiting receiver.
func (w *store) signalQueue() {
	w.mu.Lock()
	close(w.queueCh)
	w.queueCh = make(chan struct{})
	w.mu.Unlock()
}

// encode and decode store records as JSON. A record that does not decode is
// reported as ErrCorrupt naming where it was found.
func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("localworld: encode %T: %w", v, err)
	}
	return b, nil
}

// encoder is a reused buffer to encode a value in that put copies. A
// store keeps one for its write transactions, which run one at a time.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	bin []byte // a binary record (codec.go)
}

// maxKeptEncoder bounds the buffers a store keeps for the next value.
const maxKeptEncoder = 64 << 10

// putEncoded stores v under k in bucket b: its binary record when it is
// one of the records the binary form holds (codec.go), else as encode
// does. It encodes v in the store's reused buffers, since put stores a
// copy of it: the value is allocated once, as the store's copy, instead of
// twice (the encoding's result, then the copy), which a serial step's
// commit did for each of its values (events, steps, run).
func putEncoded(tx kvTx, b bucketID, k []byte, v any) error {
	e := tx.encoder()
	defer func() {
		if e.buf.Cap() > maxKeptEncoder {
			e.buf = bytes.Buffer{}
		}
		if cap(e.bin) > maxKeptEncoder {
			e.bin = nil
		}
	}()
	if bin, err := appendBinary(e.bin[:0], v, e); err == nil {
		e.bin = bin
		return tx.put(b, k, bin)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("localworld: encode %T: %w", v, err)
	}
	out := e.buf.Bytes()
	return tx.put(b, k, out[:len(out)-1]) // Encode ends a value with a newline
}

// decode decodes a stored record into out: a binary record (codec.go) or
// JSON.
func decode(b bucketID, k, v []byte, out any) error {
	if len(v) > 0 && v[0] == codecV1 {
		if err := decodeBinary(v, out); err != nil {
			return corruptRead(b, k, "%v", err)
		}
		return nil
	}
	if err := json.Unmarshal(v, out); err != nil {
		return corruptRead(b, k, "%v", err)
	}
	return nil
}

// corruptRead is the error of a read of bucket b's key k whose bytes do not
// verify: ErrCorrupt, and world.ErrCorrupt for the World's callers.
func corruptRead(b bucketID, k []byte, format string, args ...any) error {
	return fmt.Errorf("%w (%w): bucket %s, key %q: %s", ErrCorrupt, world.ErrCorrupt, b, k, fmt.Sprintf(format, args...))
}

// getJSON reads and decodes the record stored under k in bucket b; nil
// when there is none.
func getJSON[T any](tx kvTx, b bucketID, k []byte) (*T, error) {
	v, err := tx.get(b, k)
	if v == nil || err != nil {
		return nil, err
	}
	var x T
	if err := decode(b, k, v, &x); err != nil {
		return nil, err
	}
	return &x, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", world.ErrInvalid, fmt.Sprintf(format, args...))
}
