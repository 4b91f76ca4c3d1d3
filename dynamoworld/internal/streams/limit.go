package streams

import "github.com/skeinflow/skein/world"

// The bytes bound (Config.MaxStreamBytes; see doc.go, Bytes bound).

// admit refuses (done, with a *world.LimitError) each write of batch not
// done yet that would take the stream, as last known, past
// MaxStreamBytes, and returns the chunks of the others, the data bytes of
// each (its length less its write's framing) and their sum.
func (s *Streamer) admit(st *stream, batch []*write) (chunks [][]byte, sizes []int64, size int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, w := range batch {
		if w.done {
			continue
		}
		var n int64
		for _, c := range w.chunks {
			n += int64(len(c) - w.framing)
		}
		if st.bytes+size+n > s.max {
			w.done, w.err = true, s.limitError(st, st.bytes+size+n)
			continue
		}
		for _, c := range w.chunks {
			sizes = append(sizes, int64(len(c)-w.framing))
		}
		chunks, size = append(chunks, w.chunks...), size+n
	}
	return chunks, sizes, size
}

func (s *Streamer) limitError(st *stream, size int64) error {
	return &world.LimitError{RunID: st.runID, Limit: limitStreamBytes, Max: s.max, Size: size, What: "stream " + st.name}
}

// limitStreamBytes names the limit in a world.LimitError.
const limitStreamBytes = "stream bytes"

// metaBytes is the object metadata that records the stream's data bytes
// (WriteStreamParams.DataBytes, without framing) through the object.
const metaBytes = "bytes"

func sum(ns []int64) int64 {
	var t int64
	for _, n := range ns {
		t += n
	}
	return t
}

// wrote advances what st knows past an object of count chunks and size
// data bytes put at its tail (the close marker when closing).
func (st *stream) wrote(count int, size int64, closing bool) {
	st.tail, st.bytes, st.closed, st.known = st.tail+int64(count), st.bytes+size, closing, true
	if closing {
		st.setHint(st.tail, -1)
	} else {
		st.setHint(st.tail, st.bytes)
	}
}
