package localworld

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// The correlation index (bucket events_by_correlation) lists the events of
// a step, hook or wait by run, in sequence order, in chunks: an entry's key
// is s(correlationID) s(runID) seq(first), the sequence number of its first
// event, and its value the sequence numbers of up to corrChunk-1 later
// events of the same correlation and run, each as the uvarint of its
// distance from the one before. A step's created, started and completed
// events are one entry, not three. An entry with an empty value is a chunk
// of one event: layout 1's entries, one per event, read as such chunks.
//
// Listings page over the events, not the entries: a cursor names an
// event's key as layout 1 had it (s(runID) seq(seq) after the correlation
// ID, or seq(seq) in a listing of one run), so a chunk is expanded into
// those keys and a page may end inside one.

// corrChunk bounds the events of one index entry (its value is rewritten
// with each).
const corrChunk = 16

// indexCorrelation adds the event seq of run runID to correlation corr's
// index: to the run's last chunk while it has room and ends before seq,
// else as a new chunk.
func indexCorrelation(tx kvTx, corr, runID string, seq int64) error {
	prefix := newKey().str(corr).str(runID)
	var lastK, lastV []byte
	err := tx.scan(bEventsByCorr, prefix, prefixEnd(prefix), true, func(k, v []byte) bool {
		lastK, lastV = k, v
		return false
	})
	if err != nil {
		return err
	}
	if lastK != nil {
		seqs, err := chunkSeqs(nil, lastK[len(prefix):], lastV)
		if err != nil {
			return corruptRead(bEventsByCorr, lastK, "%v", err)
		}
		if last := seqs[len(seqs)-1]; len(seqs) < corrChunk && seq > last {
			v := binary.AppendUvarint(bytes.Clone(lastV), uint64(seq-last))
			return tx.put(bEventsByCorr, bytes.Clone(lastK), v)
		}
	}
	return tx.put(bEventsByCorr, key(prefix).seq(seq), nil)
}

var errBadChunk = errors.New("a correlation index entry that does not decode")

// chunkSeqs appends to dst the sequence numbers of the index entry whose
// key ends with seqKey (seq(first)) and whose value is v.
func chunkSeqs(dst []int64, seqKey, v []byte) ([]int64, error) {
	first, rest, ok := readU64(seqKey)
	if !ok || len(rest) != 0 || int64(first) < 0 {
		return dst, errBadChunk
	}
	s := int64(first)
	dst = append(dst, s)
	for k := 1; len(v) > 0; k++ {
		d, n := binary.Uvarint(v)
		if n <= 0 || d == 0 || d > uint64(1<<62) || s+int64(d) < s || k == corrChunk {
			return dst, errBadChunk
		}
		s += int64(d)
		dst = append(dst, s)
		v = v[n:]
	}
	return dst, nil
}

// expandChunk calls emit with the listing suffix of each event of the
// index entry whose key suffix (after the listing's prefix) is suffix, in
// order (reverse when desc), until emit returns false.
func expandChunk(suffix, v []byte, desc bool, emit func(vsuffix []byte) bool) (bool, error) {
	if len(suffix) < 8 {
		return false, errBadChunk
	}
	head := suffix[:len(suffix)-8]
	seqs, err := chunkSeqs(make([]int64, 0, 4), suffix[len(head):], v)
	if err != nil {
		return false, err
	}
	buf := make([]byte, 0, len(suffix))
	for i := range seqs {
		s := seqs[i]
		if desc {
			s = seqs[len(seqs)-1-i]
		}
		buf = key(append(buf[:0], head...)).seq(s)
		if !emit(buf) {
			return false, nil
		}
	}
	return true, nil
}
