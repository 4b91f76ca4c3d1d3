package sdk

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// Streams are a run's ordered output: steps write chunks of bytes or JSON
// values to the default stream or to named ones, and clients read them,
// live, while the run proceeds. A run's streams are closed when it ends.

const (
	streamPrefix = "user"
	tagBytes     = 'b'
	tagJSON      = 'j'
)

// streamName maps a namespace to the stored stream name.
func streamName(namespace string) (string, error) {
	name := streamPrefix
	if namespace != "" {
		name += "." + base64.RawURLEncoding.EncodeToString([]byte(namespace))
	}
	if err := world.ValidateStreamName(name); err != nil {
		return "", fmt.Errorf("workflow: stream namespace %q: %w", namespace, err)
	}
	return name, nil
}

// StreamWriter writes to one of a run's streams from inside a step. Each
// Write or WriteJSON is one chunk.
type StreamWriter struct {
	ctx       context.Context
	w         world.World
	runID     string
	namespace string
	name      string
	err       error
}

// Writer returns a writer for the stream namespace ("" is the default
// stream) of the run whose step ctx belongs to. Outside a step, its writes
// fail.
func Writer(ctx context.Context, namespace string) *StreamWriter {
	info, ok := engine.StepInfoFrom(ctx)
	if !ok {
		return &StreamWriter{err: errors.New("workflow: stream writers are only available in steps")}
	}
	name, err := streamName(namespace)
	return &StreamWriter{ctx: ctx, w: info.World, runID: info.RunID, namespace: namespace, name: name, err: err}
}

func (s *StreamWriter) write(tag byte, p []byte) error {
	if s.err != nil {
		return s.err
	}
	chunk := make([]byte, 1+len(p))
	chunk[0] = tag
	copy(chunk[1:], p)
	// The tag is framing: the stream bytes bound counts what the code wrote.
	err := s.w.WriteStream(s.ctx, &world.WriteStreamParams{RunID: s.runID, Name: s.name, Chunks: [][]byte{chunk}, Framing: 1})
	if le := (*world.LimitError)(nil); errors.As(err, &le) {
		named := *le // the World names the stream as stored
		named.What = s.what()
		return &named
	}
	if errors.Is(err, world.ErrConflict) {
		// The World names the stream as stored; say which one the code
		// wrote to.
		return fmt.Errorf("workflow: %s of run %s is closed (by StreamWriter.Close, or the run ended): "+
			"a closed stream stays closed for the rest of the run, write to another namespace: %w", s.what(), s.runID, world.ErrConflict)
	}
	return err
}

// what names the writer's stream for an error message.
func (s *StreamWriter) what() string {
	if s.namespace == "" {
		return "the default stream"
	}
	return fmt.Sprintf("stream %q", s.namespace)
}

// Write writes p as one chunk of bytes.
func (s *StreamWriter) Write(p []byte) (int, error) {
	if err := s.write(tagBytes, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteJSON writes v as one JSON chunk.
func (s *StreamWriter) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &SerializationError{What: "stream value", Err: err}
	}
	return s.write(tagJSON, b)
}

// Close marks the stream done; readers end after its last chunk. A closed
// stream stays closed for the rest of the run: later writes to its
// namespace, from this step or any other (a retry of this one too), fail
// with an error matching world.ErrConflict.
func (s *StreamWriter) Close() error {
	if s.err != nil {
		return s.err
	}
	return s.w.CloseStream(s.ctx, &world.CloseStreamParams{RunID: s.runID, Name: s.name})
}

// StreamOptions selects what ReadStream and ReadStreamPage read.
type StreamOptions struct {
	// Namespace names the stream ("" is the default stream).
	Namespace string
	// Start is the first chunk's index; negative counts back from the end
	// (-1 is the last chunk), resolved when the read starts.
	Start int64
	// Limit, when positive, bounds the chunks read: ReadStream ends after
	// Limit chunks, ReadStreamPage returns at most Limit (0: the World's
	// page size; a World may return fewer).
	Limit int
}

// StreamChunk is one chunk of a stream.
type StreamChunk struct {
	Index int64
	Data  []byte
	// JSON reports a chunk written with WriteJSON.
	JSON bool
}

// Decode decodes a JSON chunk into v.
func (c StreamChunk) Decode(v any) error {
	if !c.JSON {
		return errors.New("workflow: stream chunk is bytes, not JSON")
	}
	return json.Unmarshal(c.Data, v)
}

func decodeChunk(c world.StreamChunk) StreamChunk {
	out := StreamChunk{Index: c.Index, Data: c.Data}
	if len(c.Data) > 0 {
		out.JSON = c.Data[0] == tagJSON
		out.Data = c.Data[1:]
	}
	return out
}

// ReadStream reads a run's stream live: every chunk from opts.Start as it
// is written, ending after the last chunk once the stream is closed (at the
// latest when the run is at rest: ended, with nothing of it left running),
// after opts.Limit chunks when it is positive, or with ctx's error. A
// stream a run at rest never wrote ends at once, empty.
func (c *Client) ReadStream(ctx context.Context, runID string, opts StreamOptions) iter.Seq2[StreamChunk, error] {
	return func(yield func(StreamChunk, error) bool) {
		name, err := streamName(opts.Namespace)
		if err != nil {
			yield(StreamChunk{}, err)
			return
		}
		read := 0
		for ch, err := range world.Tail(ctx, restStreams{c.w}, world.TailParams{RunID: runID, Name: name, Start: opts.Start}) {
			if err != nil {
				yield(StreamChunk{}, err)
				return
			}
			if err := sealedChunk(runID, ch.Data); err != nil {
				yield(StreamChunk{}, err)
				return
			}
			if !yield(decodeChunk(ch), nil) {
				return
			}
			if read++; opts.Limit > 0 && read >= opts.Limit {
				return
			}
		}
	}
}

// sealedChunk returns an error matching world.ErrKeyUnavailable, naming
// the run and the key, when data (a chunk as the client's World returned
// it) is still sealed: the World holds no key that opens it.
func sealedChunk(runID string, data []byte) error {
	if kid, sealed := sealmark.KeyID(data); sealed {
		return &sealmark.KeylessError{KeyID: kid, RunID: runID,
			Read: "the stream is encrypted, and this client's World has no key to open it (see encrypt.Wrap; skein -keys)"}
	}
	return nil
}

// StreamInfo describes a stream: the index of its last chunk (-1 when empty
// or unknown) and whether it is closed.
type StreamInfo struct {
	TailIndex int64
	Done      bool
}

// StreamInfo returns the state of a run's stream. A stream of a run at
// rest is done, closed or not.
func (c *Client) StreamInfo(ctx context.Context, runID, namespace string) (StreamInfo, error) {
	name, err := streamName(namespace)
	if err != nil {
		return StreamInfo{}, err
	}
	info, err := c.w.StreamInfo(ctx, &world.StreamInfoParams{RunID: runID, Name: name})
	if err != nil {
		return StreamInfo{}, err
	}
	if !info.Done {
		// A stream of a run at rest is done (restStreams).
		run, err := c.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			return StreamInfo{}, err
		}
		info.Done = run.Deactivated()
	}
	return StreamInfo{TailIndex: info.TailIndex, Done: info.Done}, nil
}

// ListStreams returns the namespaces of a run's streams ("" for the default
// one), sorted.
func (c *Client) ListStreams(ctx context.Context, runID string) ([]string, error) {
	names, err := c.w.ListStreams(ctx, &world.ListStreamsParams{RunID: runID})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		switch {
		case n == streamPrefix:
			out = append(out, "")
		case strings.HasPrefix(n, streamPrefix+"."):
			if b, err := base64.RawURLEncoding.DecodeString(n[len(streamPrefix)+1:]); err == nil {
				out = append(out, string(b))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// restStreams reads a run's streams as its readers should see them: a
// stream of a run at rest (Run.Deactivated) is done, whether or not it was
// ever written or closed, since nothing of the run writes any more. The
// run is read only when a page is empty and open.
type restStreams struct{ world.World }

func (s restStreams) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	page, err := s.World.ReadStream(ctx, p)
	if err != nil || page.Done || len(page.Chunks) > 0 {
		return page, err
	}
	run, err := s.GetRun(ctx, &world.GetRunParams{RunID: p.RunID})
	if err != nil {
		return nil, err
	}
	if run.Deactivated() {
		// A chunk may have landed between the two reads: read again, then
		// the run's streams are final.
		if page, err = s.World.ReadStream(ctx, p); err == nil && len(page.Chunks) == 0 {
			page.Done = true
		}
	}
	return page, err
}

// StreamChanged passes the World's notifications on (world.Tail polls
// without them).
func (s restStreams) StreamChanged(runID, name string) <-chan struct{} {
	if n, ok := s.World.(world.StreamNotifier); ok {
		return n.StreamChanged(runID, name)
	}
	return nil
}
