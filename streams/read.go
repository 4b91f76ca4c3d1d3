package streams

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

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

// object is one listed object of a stream: its first index, and whether it
// is the close marker (the only empty object).
type object struct {
	key   string
	first int64
	eof   bool
}

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
			out = append(out, object{key: aws.ToString(o.Key), first: first, eof: aws.ToInt64(o.Size) == 0})
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

// tailOf reads a stream's tail, listing from a known earlier tail.
func (s *Streamer) tailOf(ctx context.Context, st *stream) (tail, error) {
	hint, hintBytes := st.getHint()
	objs, err := s.list(ctx, st.runID, st.name, hint, -1)
	if err != nil {
		return tail{}, err
	}
	if len(objs) == 0 {
		return tail{next: hint, bytes: hintBytes}, nil
	}
	last := objs[len(objs)-1]
	if last.eof {
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

// get reads and verifies the object at key, which holds the chunks of at.
func (s *Streamer) get(ctx context.Context, key string, at place) ([][]byte, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("streams: S3 GetObject s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("streams: S3 GetObject s3://%s/%s: %w", s.bucket, key, err)
	}
	chunks, err := decodeObject(at, b)
	if err == nil && out.Metadata["count"] != strconv.Itoa(len(chunks)) {
		err = fmt.Errorf("%w: %d chunks, its metadata says %q", errFormat, len(chunks), out.Metadata["count"])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: s3://%s/%s", err, s.bucket, key)
	}
	return chunks, nil
}

// ReadStream returns up to p.Limit chunks (default 100, at most 1000) from
// p.Start; a negative Start counts back from the end as it is now. It lists
// the objects from the one that may hold Start (an object holds at most
// MaxChunksPerObject chunks) and reads those the page needs. A stream that
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
	objs, err := s.list(ctx, p.RunID, p.Name, max(0, start-int64(s.per)+1), end)
	if err != nil {
		return nil, err
	}
	// The objects the page needs: the last one starting at or before start,
	// and those after it starting before end.
	var need []object
	done, eofAt := false, int64(-1)
	for i, o := range objs {
		if o.eof {
			eofAt = o.first
			continue
		}
		if o.first >= end {
			continue
		}
		if o.first <= start && i+1 < len(objs) && objs[i+1].first <= start {
			continue
		}
		need = append(need, o)
	}
	got := make([][][]byte, len(need))
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for i, o := range need {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := s.get(ctx, o.key, place{runID: p.RunID, name: p.Name, first: o.first})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			got[i] = c
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	page := &world.StreamPage{Chunks: []world.StreamChunk{}}
	for i, o := range need {
		for j, c := range got[i] {
			idx := o.first + int64(j)
			if idx >= start && idx < end {
				page.Chunks = append(page.Chunks, world.StreamChunk{Index: idx, Data: c})
			}
		}
	}
	page.Next = start + int64(len(page.Chunks))
	if len(page.Chunks) == 0 {
		page.Next = max(start, 0)
	}
	done = eofAt >= 0 && page.Next >= eofAt
	page.Done = done
	return page, nil
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
