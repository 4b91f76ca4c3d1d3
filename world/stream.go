package world

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// Streamer stores a run's output streams: ordered chunks of bytes, closed once.
type Streamer interface {
	// WriteStream appends Chunks, in order and contiguously, to a stream,
	// creating it on first write. Concurrent writers to one stream each get
	// their chunks contiguous and every chunk a unique index. Writing to a
	// closed stream is an ErrConflict error. A write that would take the
	// stream past the World's Limits.MaxStreamBytes, counted over all its
	// writers (each write's DataBytes), is refused whole with a
	// *LimitError, as is a write that would create a stream when its run
	// has Limits.MaxStreams already (counted over all writers; Limit
	// "streams").
	WriteStream(ctx context.Context, p *WriteStreamParams) error
	// CloseStream marks a stream done (creating it empty if need be, within
	// Limits.MaxStreams as a write would). Closing twice is not an error.
	CloseStream(ctx context.Context, p *CloseStreamParams) error
	// ReadStream returns up to Limit chunks from Start. A negative Start
	// counts back from the end (-1 is the last chunk), resolved at the time of
	// the call. Reading a stream that does not exist returns an empty page
	// that is not done.
	ReadStream(ctx context.Context, p *ReadStreamParams) (*StreamPage, error)
	// StreamInfo returns the index of the last chunk (-1 when empty or
	// unknown) and whether the stream is closed.
	StreamInfo(ctx context.Context, p *StreamInfoParams) (*StreamInfo, error)
	// ListStreams returns the names of a run's streams, sorted.
	ListStreams(ctx context.Context, p *ListStreamsParams) ([]string, error)
}

// StreamNotifier is an optional Streamer capability: a channel closed at the
// next write to or close of a stream, so tails wake at once instead of polling.
type StreamNotifier interface {
	StreamChanged(runID, name string) <-chan struct{}
}

// WriteStreamParams appends chunks to a stream.
type WriteStreamParams struct {
	RunID  string
	Name   string
	Chunks [][]byte
	// Framing is the bytes at the start of each chunk that its writer
	// added to what its user wrote (the SDK's one-byte tag): 0 to
	// maxStreamFraming (8), and no more than any chunk's length.
	// Limits.MaxStreamBytes counts the rest (DataBytes).
	Framing int
}

// maxStreamFraming bounds WriteStreamParams.Framing.
const maxStreamFraming = 8

// DataBytes returns the bytes p's chunks count against
// Limits.MaxStreamBytes: what the user wrote, their lengths less Framing
// each, and at least one byte a chunk, so that the bound bounds a stream's
// chunks too (empty writes are not free). A Framing out of range is an
// ErrInvalid error.
func (p *WriteStreamParams) DataBytes() (int64, error) {
	if p.Framing < 0 || p.Framing > maxStreamFraming {
		return 0, fmt.Errorf("%w: stream framing of %d bytes (0 to %d)", ErrInvalid, p.Framing, maxStreamFraming)
	}
	var n int64
	for i, c := range p.Chunks {
		if len(c) < p.Framing {
			return 0, fmt.Errorf("%w: stream chunk %d has %d bytes, fewer than its framing (%d)", ErrInvalid, i, len(c), p.Framing)
		}
		n += max(int64(len(c)-p.Framing), 1)
	}
	return n, nil
}

// CloseStreamParams names a stream to close.
type CloseStreamParams struct{ RunID, Name string }

// ReadStreamParams selects chunks of a stream.
type ReadStreamParams struct {
	RunID string
	Name  string
	Start int64
	Limit int
}

// StreamInfoParams names a stream.
type StreamInfoParams struct{ RunID, Name string }

// ListStreamsParams names a run.
type ListStreamsParams struct{ RunID string }

// StreamChunk is one chunk and its index (0-based, dense).
type StreamChunk struct {
	Index int64
	Data  []byte
}

// StreamPage is the result of a read. Next is the index to read from to
// continue. Done is true when the stream is closed and the page reaches its
// end.
type StreamPage struct {
	Chunks []StreamChunk
	Next   int64
	Done   bool
}

// StreamInfo describes a stream.
type StreamInfo struct {
	TailIndex int64
	Done      bool
}

// MaxStreamNameLength bounds stream names.
const MaxStreamNameLength = 256

// ValidateStreamName checks a stream name: 1 to 256 characters of letters,
// digits and . _ - :
func ValidateStreamName(name string) error {
	if name == "" || len(name) > MaxStreamNameLength {
		return fmt.Errorf("%w: stream name must have 1 to %d characters", ErrInvalid, MaxStreamNameLength)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == ':'
		if !ok {
			return fmt.Errorf("%w: stream name %q has character %q", ErrInvalid, name, r)
		}
	}
	return nil
}

// TailParams selects a live read.
type TailParams struct {
	RunID string
	Name  string
	// Start is the first index; negative counts back from the end, resolved
	// once when the tail starts.
	Start int64
	// PollMin and PollMax bound the polling backoff (defaults 10 ms and 1 s)
	// when the Streamer is not a StreamNotifier.
	PollMin, PollMax time.Duration
}

// Tail reads a stream live: it yields every chunk from Start as it is written
// and ends after the last chunk of a closed stream, or with the context's
// error. It works on any Streamer, waking on StreamNotifier when available
// and otherwise polling with exponential backoff.
func Tail(ctx context.Context, s Streamer, p TailParams) iter.Seq2[StreamChunk, error] {
	return func(yield func(StreamChunk, error) bool) {
		minPoll, maxPoll := p.PollMin, p.PollMax
		if minPoll <= 0 {
			minPoll = 10 * time.Millisecond
		}
		if maxPoll < minPoll {
			maxPoll = max(time.Second, minPoll)
		}
		next := p.Start
		if next < 0 {
			info, err := s.StreamInfo(ctx, &StreamInfoParams{RunID: p.RunID, Name: p.Name})
			if err != nil {
				yield(StreamChunk{}, err)
				return
			}
			next = max(0, info.TailIndex+1+next)
		}
		notifier, _ := s.(StreamNotifier)
		delay := minPoll
		for {
			var changed <-chan struct{}
			if notifier != nil {
				changed = notifier.StreamChanged(p.RunID, p.Name)
			}
			page, err := s.ReadStream(ctx, &ReadStreamParams{RunID: p.RunID, Name: p.Name, Start: next})
			if err != nil {
				yield(StreamChunk{}, err)
				return
			}
			for _, c := range page.Chunks {
				if !yield(c, nil) {
					return
				}
			}
			if page.Done {
				return
			}
			if len(page.Chunks) > 0 {
				next = page.Next
				delay = minPoll
				continue
			}
			timer := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				yield(StreamChunk{}, ctx.Err())
				return
			case <-changed:
				timer.Stop()
			case <-timer.C:
				delay = min(delay*2, maxPoll)
			}
		}
	}
}
