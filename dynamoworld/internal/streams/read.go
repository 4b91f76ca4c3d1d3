package streams

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/world"
)

// setHint records a tail seen, with the stream's data bytes there (-1:
// not known, as at a close marker).
func (st *stream) setHint(tail, bytes int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case tail > st.hint:
		st.hint, st.hintBytes = tail, bytes
	case tail == st.hint && st.hintBytes < 0:
		st.hintBytes = bytes
	}
}

func (st *stream) getHint() (tail, bytes int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.hint, st.hintBytes
}

// object is one listed object of a stream: its key, its first index and
// its size.
type object struct {
	key   string
	first int64
	size  int64
}

// isMarker reports whether the listing gives o the close marker's size,
// which no object of chunks has. It is the close marker only once read
// and verified at its place (getMarker).
func (o object) isMarker() bool { return o.size == int64(markerSize) }

// list lists a stream's objects whose first index is at least from, in
// index order, stopping after the first object at or past until (until < 0:
// no bound).
func (s *Streamer) list(ctx context.Context, runID, name string, from, until int64) ([]object, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.dir(runID, name))}
	if from > 0 {
		in.StartAfter = aws.String(s.key(runID, name, from-1))
	}
	var out []object
	for {
		page, err := s.s3.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("streams: S3 ListObjectsV2 s3://%s/%s: %w", s.bucket, s.dir(runID, name), err)
		}
		for _, o := range page.Contents {
			first, ok := s.indexOf(runID, name, aws.ToString(o.Key))
			if !ok {
				continue
			}
			out = append(out, object{key: aws.ToString(o.Key), first: first, size: aws.ToInt64(o.Size)})
			if until >= 0 && first >= until {
				return out, nil
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		in.ContinuationToken = page.NextContinuationToken
	}
}

// tail is what a listing tells of a stream's end: the next free index,
// the data bytes written before it (what the last object records; -1 when
// closed, where no write needs them), and whether it is closed.
type tail struct {
	next, bytes int64
	closed      bool
}

// tailOf reads a stream's tail, listing from a known earlier tail: one
// LIST, then a HEAD of the last object, or a GET of the close marker,
// which must verify at its place.
func (s *Streamer) tailOf(ctx context.Context, st *stream) (tail, error) {
	hint, hintBytes := st.getHint()
	objs, err := s.list(ctx, st.runID, st.name, hint, -1)
	if err != nil {
		return tail{}, err
	}
	if err := s.checkListing(objs); err != nil {
		return tail{}, err
	}
	if len(objs) == 0 {
		return tail{next: hint, bytes: hintBytes}, nil
	}
	last := objs[len(objs)-1]
	if last.isMarker() {
		if _, err := s.getMarker(ctx, last.key, place{runID: st.runID, name: st.name, first: last.first}); err != nil {
			return tail{}, err
		}
		st.setHint(last.first, -1)
		return tail{next: last.first, bytes: -1, closed: true}, nil
	}
	count, bytes, err := s.head(ctx, last.key)
	if err != nil {
		return tail{}, err
	}
	t := tail{next: last.first + count, bytes: bytes}
	st.setHint(t.next, t.bytes)
	return t, nil
}

// sync learns the tail for a writer (under putMu).
func (s *Streamer) sync(ctx context.Context, st *stream) error {
	t, err := s.tailOf(ctx, st)
	if err != nil {
		return err
	}
	st.tail, st.bytes, st.closed, st.known = t.next, max(t.bytes, 0), t.closed, true
	return nil
}

// head reads an object's chunk count and the stream's data bytes through
// it (its metadata; 0 for an object of a version that did not record
// them: such a stream counts its bytes from its next object on).
func (s *Streamer) head(ctx context.Context, key string) (count, bytes int64, err error) {
	out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return 0, 0, fmt.Errorf("streams: S3 HeadObject s3://%s/%s: %w", s.bucket, key, err)
	}
	count, err = strconv.ParseInt(out.Metadata["count"], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("streams: s3://%s/%s has no chunk count: %w", s.bucket, key, err)
	}
	if v, ok := out.Metadata[metaBytes]; ok {
		if bytes, err = strconv.ParseInt(v, 10, 64); err != nil || bytes < 0 {
			return 0, 0, fmt.Errorf("%w: s3://%s/%s: stream bytes %q in its metadata", errFormat, s.bucket, key, v)
		}
	}
	return count, bytes, nil
}

// fetch GETs the object at key: its body and metadata.
func (s *Streamer) fetch(ctx context.Context, key string) ([]byte, map[string]string, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, nil, fmt.Errorf("streams: S3 GetObject s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("streams: S3 GetObject s3://%s/%s: %w", s.bucket, key, err)
	}
	return b, out.Metadata, nil
}

// get reads and verifies the object at key, which holds the chunks of at,
// and returns them with the stream's data bytes through them as its
// metadata records them (-1: not recorded, by an earlier version).
func (s *Streamer) get(ctx context.Context, key string, at place) (chunks [][]byte, bytes int64, err error) {
	b, meta, err := s.fetch(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	chunks, err = decodeObject(at, b)
	if err == nil && meta["count"] != strconv.Itoa(len(chunks)) {
		err = fmt.Errorf("%w: %d chunks, its metadata says %q", errFormat, len(chunks), meta["count"])
	}
	bytes = -1
	if v, ok := meta[metaBytes]; ok && err == nil {
		if bytes, err = strconv.ParseInt(v, 10, 64); err != nil || bytes < 0 {
			err = fmt.Errorf("%w: stream bytes %q in its metadata", errFormat, v)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: s3://%s/%s", err, s.bucket, key)
	}
	return chunks, bytes, nil
}

// getMarker reads the close marker at key and verifies it at its place
// at (the stream's tail), returning the stream's data bytes it records.
// An empty object, or one that does not verify, is world.ErrCorrupt
// naming it: never the stream's end.
func (s *Streamer) getMarker(ctx context.Context, key string, at place) (int64, error) {
	b, meta, err := s.fetch(ctx, key)
	if err != nil {
		return 0, err
	}
	bytes, err := strconv.ParseInt(meta[metaBytes], 10, 64)
	switch {
	case len(b) == 0:
		err = checkMarker(at, b, 0)
	case err != nil || bytes < 0:
		err = fmt.Errorf("%w: close marker with stream bytes %q in its metadata", errFormat, meta[metaBytes])
	case meta["count"] != "0":
		err = fmt.Errorf("%w: close marker whose metadata says %q chunks", errFormat, meta["count"])
	default:
		err = checkMarker(at, b, bytes)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: s3://%s/%s", err, s.bucket, key)
	}
	return bytes, nil
}

// ReadStream returns up to p.Limit chunks (default 100, at most 1000) from
// p.Start; a negative Start counts back from the end as it is now. It lists
// the objects from the one that may hold Start (an object holds at most
// maxChunksPerObject chunks) and reads those the page needs. A stream that
// does not exist reads as an empty page that is not done.
func (s *Streamer) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil ReadStreamParams", world.ErrInvalid)
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return nil, err
	}
	limit := p.Limit
	switch {
	case limit < 0:
		return nil, fmt.Errorf("%w: negative limit %d", world.ErrInvalid, limit)
	case limit == 0:
		limit = DefaultReadLimit
	case limit > MaxReadLimit:
		limit = MaxReadLimit
	}
	st := s.stream(p.RunID, p.Name)
	start := p.Start
	if start < 0 {
		t, err := s.tailOf(ctx, st)
		if err != nil {
			return nil, err
		}
		start = max(0, t.next+start)
	}
	end := start + int64(limit)
	from := max(0, start-int64(s.per)+1)
	objs, err := s.list(ctx, p.RunID, p.Name, from, end)
	if err == nil && from > 0 && len(objs) > 0 && objs[0].first > start {
		// No object listed holds start: it is missing, or holds more
		// chunks than this Streamer's maxChunksPerObject (its writer's was
		// larger). A listing from the stream's first object tells which.
		objs, err = s.list(ctx, p.RunID, p.Name, 0, end)
	}
	if err != nil {
		return nil, err
	}
	return s.readPage(ctx, p.RunID, p.Name, objs, start, end)
}

// StreamInfo returns the index of the stream's last chunk (-1 when empty or
// unknown) and whether it is closed: a listing from the last tail this
// process saw, and a HEAD of the last object.
func (s *Streamer) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil StreamInfoParams", world.ErrInvalid)
	}
	if err := checkStream(p.RunID, p.Name); err != nil {
		return nil, err
	}
	t, err := s.tailOf(ctx, s.stream(p.RunID, p.Name))
	if err != nil {
		return nil, err
	}
	return &world.StreamInfo{TailIndex: t.next - 1, Done: t.closed}, nil
}

// ListStreams returns the names of a run's streams, sorted: the common
// prefixes under the run's prefix.
func (s *Streamer) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	if p == nil || p.RunID == "" || strings.Contains(p.RunID, "/") {
		return nil, fmt.Errorf("%w: run ID required", world.ErrInvalid)
	}
	prefix := s.prefix + p.RunID + "/"
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")}
	names := []string{}
	for {
		page, err := s.s3.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("streams: S3 ListObjectsV2 s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for _, cp := range page.CommonPrefixes {
			if name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/"); name != "" {
				names = append(names, name)
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	sort.Strings(names)
	return names, nil
}
