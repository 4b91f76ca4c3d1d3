package localworld

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"unsafe"
)

// Values on disk. A log store keeps every key in its B-trees, but not every
// value: a value of a bucket that grows with use (runs, events, steps,
// hooks, stream chunks) of spillMin bytes or more stays in memory only
// while it is among the spillWindow (1 MiB) bytes of such values most recently
// committed; then its tree entry keeps where the value is in the file
// instead (a valueRef: offset, length and CRC-32C of the value), and a read
// fetches it from the file and checks it. Bytes that do not match are
// ErrCorrupt naming the bucket and key, never other data. The file holds
// every committed value already, so nothing is written for this, and the
// log format is unchanged: Open makes every such value a reference at once,
// and a compaction, which moves the values, builds new trees as it writes
// its new file (kv_log_compact.go).
//
// The window keeps what the next commits read (the entities of the runs
// being worked on, which the World's decoded cache answers for while the
// store holds their version) in memory; what a finished run or a long run's
// history leaves costs its keys and a reference each.

const (
	// spillMin: smaller values stay in memory (a reference is 16 bytes).
	spillMin = 64
	// defaultSpillWindow bounds the bytes of spillable values kept in
	// memory after their commit (Config.spillWindow).
	defaultSpillWindow = 1 << 20
)

// spillable reports whether values of bucket b go to disk: the buckets
// whose entries grow with runs and steps. Index buckets hold empty or small
// values; the queue's and the leases' entries live briefly.
func spillable(b bucketID) bool {
	switch b {
	case bRuns, bEvents, bSteps, bHooks, bStreamChunks:
		return true
	}
	return false
}

// valueRef is where a value is in the log file: its offset, length and
// CRC-32C, in refSize bytes after the key of an item on disk.
type valueRef struct {
	off int64
	n   uint32
	crc uint32
}

const refSize = 16

// onDisk reports whether the item's value is in the file only.
func (it memItem) onDisk() bool { return it.kn&onDiskBit != 0 }

// ref is where the value of an item on disk is.
func (it memItem) ref() valueRef {
	r := it.array()[it.keyLen():][:refSize]
	le := binary.LittleEndian
	return valueRef{off: int64(le.Uint64(r)), n: le.Uint32(r[8:]), crc: le.Uint32(r[12:])}
}

// size is the value's length, wherever it is.
func (it memItem) size() int {
	if it.onDisk() {
		return int(it.ref().n)
	}
	return len(it.val())
}

// version identifies the stored version of an item: every put, replay
// and move to disk makes a new key slice, so the same pointer is the same
// value (decoded.go).
func (it memItem) version() *byte { return it.p }

// readValue reads and checks the value ref points to in f, the store's
// file at path.
func readValue(f *os.File, path string, b bucketID, k []byte, ref valueRef) ([]byte, error) {
	if f == nil {
		return nil, corruptRead(b, k, "a value on disk in a store without a file")
	}
	v := make([]byte, ref.n)
	if _, err := f.ReadAt(v, ref.off); errors.Is(err, io.EOF) {
		return nil, corruptRead(b, k, "the %d bytes at offset %d are past the end of %s", ref.n, ref.off, path)
	} else if err != nil {
		return nil, fmt.Errorf("localworld: bucket %s, key %q: read %d bytes at offset %d of %s: %w", b, k, ref.n, ref.off, path, err)
	}
	if sum := crc32.Checksum(v, castagnoli); sum != ref.crc {
		return nil, corruptRead(b, k, "the %d bytes at offset %d of %s changed since they were written (checksum %#08x, was %#08x)",
			ref.n, ref.off, path, sum, ref.crc)
	}
	return v, nil
}

// diskItem is the item for key k whose value v is at off in the file: the
// key, then the reference, in one array.
func diskItem(k, v []byte, off int64) memItem {
	return refItem(k, valueRef{off: off, n: uint32(len(v)), crc: crc32.Checksum(v, castagnoli)})
}

// refItem is the item for key k whose value is where r says.
func refItem(k []byte, r valueRef) memItem {
	buf := make([]byte, len(k)+refSize)
	copy(buf, k)
	le := binary.LittleEndian
	b := buf[len(k):]
	le.PutUint64(b, uint64(r.off))
	le.PutUint32(b[8:], r.n)
	le.PutUint32(b[12:], r.crc)
	return makeItem(buf, len(k), true)
}

// goesToDisk reports whether a value of bucket b this long is kept on disk.
func goesToDisk(b bucketID, n int) bool { return n >= spillMin && spillable(b) }

// spillQueue holds the spillable values the last commits wrote, in commit
// order, until spillWindow bytes of newer ones follow them (each counted
// with its entry here, so the window bounds the memory it holds).
type spillQueue struct {
	q     []spilled
	head  int
	bytes int64
}

// spilled is a value written at off in the file, under the tree's key k
// (the stored slices: their identity tells whether the tree still holds
// this version).
type spilled struct {
	b   bucketID
	k   []byte
	v   []byte
	off int64
}

// cost is what a value in the window holds in memory beyond its
// reference: the value and its entry here (64 bytes).
func (e *spilled) cost() int64 { return int64(len(e.v)) + int64(unsafe.Sizeof(spilled{})) }

func (q *spillQueue) push(e spilled) {
	q.q = append(q.q, e)
	q.bytes += e.cost()
}

// pop takes the oldest value out while the queue holds more than max
// bytes.
func (q *spillQueue) pop(max int64) (spilled, bool) {
	if q.bytes <= max || q.head == len(q.q) {
		return spilled{}, false
	}
	e := q.q[q.head]
	q.q[q.head] = spilled{}
	q.head++
	q.bytes -= e.cost()
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.q) {
		n := copy(q.q, q.q[q.head:])
		clear(q.q[n:])
		q.q, q.head = q.q[:n], 0
	}
	return e, true
}

// drop takes back the values pushed since the queue held n (a commit
// that failed).
func (q *spillQueue) drop(n int) {
	for _, e := range q.q[n:] {
		q.bytes -= e.cost()
	}
	clear(q.q[n:])
	q.q = q.q[:n]
}

func (q *spillQueue) reset() { *q = spillQueue{} }

// spill moves values out of memory past the window: each still stored
// (the tree holds that very version) becomes a reference. Called with
// mem.mu held, after a commit is durable.
func (s *logStore) spill() {
	for {
		e, ok := s.spills.pop(s.spillWindow)
		if !ok {
			return
		}
		t := s.mem.buckets[e.b]
		it, ok := t.Get(keyItem(e.k))
		if !ok || it.onDisk() || it.version() != &e.k[0] {
			continue // written again or deleted since
		}
		t.ReplaceOrInsert(diskItem(it.key(), it.val(), e.off))
	}
}
