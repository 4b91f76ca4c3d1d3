package streams

import (
	"context"
	"fmt"
	"sync"

	"github.com/skeinflow/skein/world"
)

// A read checks what a listing and its GETs say of the stream's shape
// (see doc.go, Reads): objects are dense (each begins where the one
// before it ends), no object follows the close marker, and the marker
// verifies at its place and agrees with the object before it. Anything
// else is world.ErrCorrupt naming an object, never a shorter stream.

// checkListing refuses, from a listing alone, an empty object (the close
// marker of an earlier version, or an object truncated to nothing) and
// an object listed after the close marker.
func (s *Streamer) checkListing(objs []object) error {
	for i, o := range objs {
		switch {
		case o.size == 0:
			return fmt.Errorf("%w: %s: s3://%s/%s", errFormat, errEmpty, s.bucket, o.key)
		case o.isMarker() && i+1 < len(objs):
			return fmt.Errorf("%w: s3://%s/%s follows the close marker s3://%s/%s", errFormat, s.bucket, objs[i+1].key, s.bucket, o.key)
		}
	}
	return nil
}

// got is what a read learned of one listed object: its chunks, the
// stream's data bytes through it as recorded (-1: not recorded), and
// whether it was read (a close marker read is verified).
type got struct {
	chunks [][]byte
	bytes  int64
	read   bool
}

// readPage returns the chunks [start, end) of a stream, from objs, its
// listing from the object that may hold start to the first object at or
// past end. It reads the last object at or before start and those after
// it starting before end, and the close marker when the page may reach it
// (it starts at or before end): the page that ends a closed stream costs
// one GET of the 9-byte marker more, beside its other GETs.
func (s *Streamer) readPage(ctx context.Context, runID, name string, objs []object, start, end int64) (*world.StreamPage, error) {
	if err := s.checkListing(objs); err != nil {
		return nil, err
	}
	from := 0 // the last object at or before start
	for i, o := range objs {
		if o.first <= start {
			from = i
		}
	}
	objs = objs[from:]
	page := &world.StreamPage{Chunks: []world.StreamChunk{}, Next: start}
	if len(objs) == 0 {
		return page, nil
	}
	if objs[0].first > start {
		return nil, s.gapError(objs[0], start)
	}
	gots, err := s.readObjects(ctx, runID, name, objs, end)
	if err != nil {
		return nil, err
	}
	if err := s.checkDense(objs, gots); err != nil {
		return nil, err
	}
	for i, o := range objs {
		for j, c := range gots[i].chunks {
			if idx := o.first + int64(j); idx >= start && idx < end {
				page.Chunks = append(page.Chunks, world.StreamChunk{Index: idx, Data: c})
			}
		}
	}
	page.Next = start + int64(len(page.Chunks))
	last := len(objs) - 1
	page.Done = objs[last].isMarker() && gots[last].read && page.Next >= objs[last].first
	return page, nil
}

// readObjects GETs, up to 8 at a time, the objects of objs that start
// before end, and the close marker if it starts at or before end.
func (s *Streamer) readObjects(ctx context.Context, runID, name string, objs []object, end int64) ([]got, error) {
	gots := make([]got, len(objs))
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for i, o := range objs {
		marker := o.isMarker()
		if o.first > end || (o.first == end && !marker) {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			at := place{runID: runID, name: name, first: o.first}
			var g got
			var err error
			if marker {
				g.bytes, err = s.getMarker(ctx, o.key, at)
			} else {
				g.chunks, g.bytes, err = s.get(ctx, o.key, at)
			}
			g.read = err == nil
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			gots[i] = g
		})
	}
	wg.Wait()
	return gots, first
}

// checkDense checks that each object read ends where the next listed one
// begins (no chunk missing, none twice), and that a close marker read
// after an object records the data bytes that object's metadata does.
func (s *Streamer) checkDense(objs []object, gots []got) error {
	for i := 0; i+1 < len(objs); i++ {
		if !gots[i].read {
			continue
		}
		o, next := objs[i], objs[i+1]
		end := o.first + int64(len(gots[i].chunks))
		switch {
		case next.first > end:
			return s.gapError(next, end)
		case next.first < end:
			return fmt.Errorf("%w: s3://%s/%s begins at chunk %d, inside s3://%s/%s (chunks %d to %d)", errFormat, s.bucket, next.key, next.first, s.bucket, o.key, o.first, end-1)
		case next.isMarker() && gots[i+1].read && gots[i].bytes >= 0 && gots[i].bytes != gots[i+1].bytes:
			return fmt.Errorf("%w: the close marker s3://%s/%s records %d data bytes, the object before it %d", errFormat, s.bucket, next.key, gots[i+1].bytes, gots[i].bytes)
		}
	}
	return nil
}

// gapError is a stream whose chunks from index to o's first are held by no
// object: an object is missing before o.
func (s *Streamer) gapError(o object, from int64) error {
	return fmt.Errorf("%w: no object holds chunks %d to %d, before s3://%s/%s: an object is missing",
		errFormat, from, o.first-1, s.bucket, o.key)
}
