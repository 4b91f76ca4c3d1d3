package streams

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// S3API is the part of the S3 client a Streamer uses; *s3.Client satisfies
// it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var (
	_ S3API                = (*s3.Client)(nil)
	_ world.Streamer       = (*Streamer)(nil)
	_ world.StreamNotifier = (*Streamer)(nil)
)

// Defaults and limits.
const (
	DefaultPrefix        = "skein/streams/"
	DefaultReadLimit     = 100
	MaxReadLimit         = 1000
	defaultCachedStreams = 4096
	maxPutAttempts       = 50
	// maxChunksPerObject bounds the chunks coalesced into one object. A
	// WriteStream of more chunks takes several objects; it stays contiguous
	// against writers in the same process only.
	maxChunksPerObject = 1000
)

// Registry records which streams a run has outside S3 (dynamoworld keeps
// them in its table), so that listing a run's streams needs no S3 LIST. A
// Streamer with a Registry registers a stream before it writes the
// stream's first object from this process (once per stream it keeps in
// memory), and does not write when that fails.
type Registry interface {
	// Register records the stream. created reports that no writer had
	// registered it before: since every writer registers first, the stream
	// has no object yet, and its tail is 0 without a listing. It is where
	// a run's streams are counted (world.Limits.MaxStreams): a stream its
	// run has no room for is a *world.LimitError, which the write (or
	// close) returns as is, having written nothing.
	Register(ctx context.Context, runID, name string) (created bool, err error)
}

// Config configures a Streamer. S3 and Bucket are required.
type Config struct {
	S3     S3API
	Bucket string
	// Prefix starts every key (default "skein/streams/"); a stream's objects
	// are under <Prefix><runID>/<name>/.
	Prefix string
	Logger *slog.Logger
	// Registry, when set, records every stream before its first write (see
	// Registry), and bounds the streams of a run: without one, nothing
	// counts them. ListStreams still lists S3.
	Registry Registry
	// MaxStreamBytes bounds the data bytes (the chunks' lengths less their
	// framing: WriteStreamParams.DataBytes) written to one stream, as world.Limits.MaxStreamBytes does and with its default
	// (64 MiB) when zero: a write that would pass it is refused with a
	// *world.LimitError (world.ErrLimitExceeded), and nothing of it is
	// written. The count travels with the stream's objects, so every
	// writer of every process holds the stream to it (see doc.go).
	MaxStreamBytes int64
}

// Streamer stores streams in S3. It is safe for concurrent use, and many
// Streamers (processes) may write one stream: indices are claimed with
// conditional puts (see doc.go).
type Streamer struct {
	s3     S3API
	bucket string
	prefix string
	per    int
	logger *slog.Logger
	reg    Registry
	max    int64 // MaxStreamBytes

	mu      sync.Mutex
	streams map[string]*stream
	notify  map[string]chan struct{}
}

// New returns a Streamer. Options are for Skein's own tests.
func New(cfg Config, opts ...knobs.Option) (*Streamer, error) {
	if cfg.S3 == nil {
		return nil, errors.New("streams: invalid config: S3 client required")
	}
	if cfg.Bucket == "" {
		return nil, errors.New("streams: invalid config: Bucket required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	per := knobs.Apply(opts).MaxChunksPerObject
	if per <= 0 {
		per = maxChunksPerObject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Streamer{
		s3: cfg.S3, bucket: cfg.Bucket, prefix: cfg.Prefix, per: per, logger: cfg.Logger, reg: cfg.Registry,
		max:     world.Limits{MaxStreamBytes: cfg.MaxStreamBytes}.WithDefaults().MaxStreamBytes,
		streams: map[string]*stream{}, notify: map[string]chan struct{}{},
	}, nil
}

// stream is this process's knowledge of one stream, and the queue of its
// writes. tail (the next free index), bytes (the data bytes before it) and
// closed are hints: S3's conditional put is the authority, and a refused
// put makes the writer look again.
type stream struct {
	runID, name string

	mu        sync.Mutex // guards queue and hint
	queue     []*write
	hint      int64      // a tail seen before (tails only grow): where listings start
	hintBytes int64      // the data bytes before hint (-1: not known)
	putMu     sync.Mutex // one put at a time per stream in this process
	known     bool       // tail, bytes and closed were read from S3 (or written by us)
	tail      int64
	bytes     int64
	closed    bool
	// registered: the Registry has recorded the stream (under putMu).
	registered bool
}

// write is one WriteStream or CloseStream waiting to be put.
type write struct {
	chunks  [][]byte
	framing int // WriteStreamParams.Framing: bytes of each chunk not counted
	close   bool
	done    bool
	err     error
}

func checkStream(runID, name string) error {
	if runID == "" || strings.ContainsAny(runID, "/") {
		return fmt.Errorf("%w: stream: run ID %q must be non-empty without '/'", world.ErrInvalid, runID)
	}
	return world.ValidateStreamName(name)
}

func (s *Streamer) stream(runID, name string) *stream {
	k := runID + "/" + name
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.streams[k]
	if !ok {
		if len(s.streams) >= defaultCachedStreams {
			for k, old := range s.streams {
				if old.putMu.TryLock() {
					delete(s.streams, k)
					old.putMu.Unlock()
					break
				}
			}
		}
		st = &stream{runID: runID, name: name}
		s.streams[k] = st
	}
	return st
}

func (s *Streamer) dir(runID, name string) string { return s.prefix + runID + "/" + name + "/" }

func (s *Streamer) key(runID, name string, index int64) string {
	return fmt.Sprintf("%s%016d", s.dir(runID, name), index)
}

func (s *Streamer) indexOf(runID, name, key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, s.dir(runID, name))
	if !ok || len(rest) != 16 {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// WriteStream appends p.Chunks to the stream at contiguous indices. Writes
// from this process are queued per stream and coalesced: the writer that
// gets the stream puts everything queued so far as one object, so a burst of
// small writes costs one PUT. Writing to a closed stream is
// world.ErrConflict.
func (s *Streamer) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	if p == nil {
		return fmt.Errorf("%w: nil WriteStreamParams", world.ErrInvalid)
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return err
	}
	if _, err := p.DataBytes(); err != nil {
		return err
	}
	if len(p.Chunks) == 0 {
		return nil
	}
	chunks := make([][]byte, len(p.Chunks))
	for i, c := range p.Chunks {
		chunks[i] = bytes.Clone(c)
	}
	return s.submit(ctx, p.RunID, p.Name, &write{chunks: chunks, framing: p.Framing})
}

// CloseStream puts the close marker at the stream's tail (creating the
// stream empty if need be): an object of no chunks, sealed to the tail
// and the stream's data bytes. Closing a closed stream is not an error.
func (s *Streamer) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	if p == nil {
		return fmt.Errorf("%w: nil CloseStreamParams", world.ErrInvalid)
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return err
	}
	return s.submit(ctx, p.RunID, p.Name, &write{close: true})
}

// submit queues w and puts the queue until w is done.
func (s *Streamer) submit(ctx context.Context, runID, name string, w *write) error {
	st := s.stream(runID, name)
	st.mu.Lock()
	st.queue = append(st.queue, w)
	st.mu.Unlock()
	st.putMu.Lock()
	defer st.putMu.Unlock()
	for {
		st.mu.Lock()
		if w.done {
			st.mu.Unlock()
			return w.err
		}
		batch := st.take(s.per)
		st.mu.Unlock()
		err := s.put(ctx, st, batch)
		st.mu.Lock()
		for _, b := range batch {
			if !b.done { // a write refused on its own (put) keeps its error
				b.done, b.err = true, err
			}
		}
		st.mu.Unlock()
		if err == nil {
			s.changed(runID, name)
		}
	}
}

// take removes the next batch from the queue: a close alone, or writes up
// to per chunks (at least one write, split if it alone is larger).
func (st *stream) take(per int) []*write {
	if st.queue[0].close {
		b := st.queue[:1]
		st.queue = st.queue[1:]
		return b
	}
	n, i := 0, 0
	for i < len(st.queue) && !st.queue[i].close && (i == 0 || n+len(st.queue[i].chunks) <= per) {
		n += len(st.queue[i].chunks)
		i++
	}
	b := st.queue[:i:i]
	st.queue = st.queue[i:]
	return b
}

// put writes one batch at the stream's tail with If-None-Match, learning
// the tail again from S3 after a refusal. A write of the batch that would
// take the stream past MaxStreamBytes is refused on its own (done, with
// its *world.LimitError); the others are put.
func (s *Streamer) put(ctx context.Context, st *stream, batch []*write) error {
	if err := s.register(ctx, st); err != nil {
		return err
	}
	if batch[0].close {
		return s.putObject(ctx, st, nil, true, 0, 0)
	}
	for range maxPutAttempts {
		if !st.known {
			if err := s.sync(ctx, st); err != nil {
				return err
			}
		}
		chunks, sizes, size := s.admit(st, batch)
		if len(chunks) == 0 {
			return nil // every write refused, or none had chunks
		}
		k := min(len(chunks), s.per)
		err := s.putObject(ctx, st, chunks[:k], false, size, sum(sizes[:k]))
		if le := (*world.LimitError)(nil); errors.As(err, &le) {
			continue // another writer took the bytes admit counted on: judge the writes again
		}
		if err != nil {
			return err
		}
		// The rest of one write larger than an object (take puts such a
		// write alone): contiguous against this process's writers only,
		// and refused past the limit even with its head written.
		for i := k; i < len(chunks); i += s.per {
			j := min(len(chunks), i+s.per)
			if err := s.putObject(ctx, st, chunks[i:j], false, sum(sizes[i:]), sum(sizes[i:j])); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("streams: stream %q of run %s: its bytes kept moving after %d attempts", st.name, st.runID, maxPutAttempts)
}

// register records the stream with the Registry before its first object
// from this process. A stream new to the Registry has no object: its tail
// is 0, known without a listing.
func (s *Streamer) register(ctx context.Context, st *stream) error {
	if s.reg == nil || st.registered {
		return nil
	}
	created, err := s.reg.Register(ctx, st.runID, st.name)
	if le := (*world.LimitError)(nil); errors.As(err, &le) {
		return le
	}
	if err != nil {
		return fmt.Errorf("streams: register stream %q of run %s: %w", st.name, st.runID, err)
	}
	st.registered = true
	if created && !st.known {
		st.tail, st.bytes, st.closed, st.known = 0, 0, false, true
	}
	return nil
}

// putObject puts chunks, of size data bytes (without their framing), as
// one object at the stream's tail (or the close marker), recording in its
// metadata the stream's data bytes through it. need is the data bytes the
// write still has to put, chunks included: a stream that turns out to hold
// more than MaxStreamBytes-need (another writer took the tail) refuses it
// with a *world.LimitError.
func (s *Streamer) putObject(ctx context.Context, st *stream, chunks [][]byte, closing bool, need, size int64) error {
	var body, unsealed []byte
	if !closing {
		unsealed = encodeBody(chunks)
	}
	wid := newWriteID()
	for attempt := 0; attempt < maxPutAttempts; attempt++ {
		if !st.known {
			if err := s.sync(ctx, st); err != nil {
				return err
			}
		}
		if st.closed {
			if closing {
				return nil
			}
			return fmt.Errorf("%w: stream %q of run %s is closed", world.ErrConflict, st.name, st.runID)
		}
		if !closing && st.bytes+need > s.max {
			return s.limitError(st, st.bytes+need)
		}
		key := s.key(st.runID, st.name, st.tail)
		at := place{runID: st.runID, name: st.name, first: st.tail}
		if closing {
			body = sealMarker(at, st.bytes) // bound to the tail and the stream's bytes
		} else {
			body = seal(unsealed, at) // bound to this index
		}
		_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
			IfNoneMatch: aws.String("*"), ContentType: aws.String("application/octet-stream"),
			Metadata: map[string]string{"count": strconv.Itoa(len(chunks)), "wid": wid, metaBytes: strconv.FormatInt(st.bytes+size, 10)},
		})
		if err == nil {
			st.wrote(len(chunks), size, closing)
			return nil
		}
		st.known = false
		if !taken(err) {
			// The outcome is unknown: the object may have been stored
			// before the error. Look before writing again.
			if mine, herr := s.isMine(ctx, key, wid); herr == nil && mine {
				st.wrote(len(chunks), size, closing)
				return nil
			}
			return fmt.Errorf("streams: S3 PutObject s3://%s/%s: %w", s.bucket, key, err)
		}
		// The index is taken: by another writer, or by this very put if a
		// retry of the SDK's met its own first attempt.
		if mine, herr := s.isMine(ctx, key, wid); herr == nil && mine {
			st.wrote(len(chunks), size, closing)
			return nil
		}
		if attempt > 2 {
			if err := sleep(ctx, time.Duration(rand.IntN(10*attempt+1))*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("streams: stream %q of run %s: no free index after %d attempts", st.name, st.runID, maxPutAttempts)
}

// taken reports a refused conditional put: the index is taken (412), or a
// concurrent conditional put to it is in flight (409).
func taken(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "PreconditionFailed", "ConditionalRequestConflict":
			return true
		}
	}
	return false
}

func (s *Streamer) isMine(ctx context.Context, key, wid string) (bool, error) {
	out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return false, err
	}
	return out.Metadata["wid"] == wid, nil
}

func newWriteID() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// StreamChanged returns a channel closed at the next write to or close of
// the stream through this Streamer.
func (s *Streamer) StreamChanged(runID, name string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := runID + "/" + name
	ch, ok := s.notify[k]
	if !ok {
		ch = make(chan struct{})
		s.notify[k] = ch
	}
	return ch
}

func (s *Streamer) changed(runID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := runID + "/" + name
	if ch, ok := s.notify[k]; ok {
		close(ch)
		delete(s.notify, k)
	}
}

// Close wakes every StreamChanged waiter.
func (s *Streamer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ch := range s.notify {
		close(ch)
		delete(s.notify, k)
	}
	return nil
}
