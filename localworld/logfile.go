package localworld

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The log format (kv_log.go) is a header followed by records:
//
//	header (64 bytes, little-endian)
//	  0  magic "SKEINLOG"
//	  8  version u32 (1)
//	 12  header length u32 (64)
//	 16  first log sequence u64: the seq of the first commit record
//	 24  snapshot records u64: how many snapshot records follow the header
//	 32  snapshot end u64: the offset where commit records start
//	 40  closed end u64: the offset the log ended at when the store was
//	     last closed (Close), or 0: the file holds at least that much,
//	     all whole records (an earlier version left it 0)
//	 48  reserved (zero)
//	 60  CRC-32C of bytes 0-59
//
//	record (20-byte header, then the payload)
//	  0  magic "SKR1"
//	  4  payload length u32
//	  8  CRC-32C of the length, the seq and the payload
//	 12  seq u64: snapshot records count 1, 2, ...; commit records count on
//	     from the header's first log sequence, one more per record
//	 20  payload: kind u8 (1 commit, 2 snapshot), then operations
//
//	operation
//	  put    0x01 bucket u8 uvarint(len key) key uvarint(len value) value
//	  delete 0x02 bucket u8 uvarint(len key) key
//
// A commit record holds the writes of one commit (one transaction, or the
// transactions of one group commit, which are durable together), in order,
// and is written with one write call. The snapshot (a compaction's copy of
// the live data, or the format marker of a new store) is written before the
// file gets its name and is never torn. After the last record the file may
// hold zeros: space allocated ahead of the writes.
//
// A commit record is written into space allocated (written as zeros, and
// synced) ahead of it, so a crash in the middle of its write leaves the
// file's size, with zeros where the write did not reach: a last record
// that the file ends inside was cut short by something else (a truncation,
// an incomplete copy) and is damage, never a torn write. Close records in
// the header the offset the log ends at ("closed end"): the records before
// it are whole, since the log is only appended to, so a bad record or a
// file end before it is damage too, never a torn write.

const (
	logMagic        = "SKEINLOG"
	logVersion      = 1
	logHeaderSize   = 64
	recMagic        = "SKR1"
	recHeaderSize   = 20
	maxRecordLen    = 1 << 30 // sanity bound on a record's payload
	recKindCommit   = 1
	recKindSnapshot = 2
	opPut           = 1
	opDel           = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logHeader is the file header.
type logHeader struct {
	firstSeq    uint64 // seq of the first commit record
	snapRecords uint64 // snapshot records after the header
	snapEnd     uint64 // offset of the first commit record
	closedEnd   uint64 // end of the log at the last Close, or 0
}

func (h logHeader) encode() []byte {
	b := make([]byte, logHeaderSize)
	copy(b, logMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], logVersion)
	le.PutUint32(b[12:], logHeaderSize)
	le.PutUint64(b[16:], h.firstSeq)
	le.PutUint64(b[24:], h.snapRecords)
	le.PutUint64(b[32:], h.snapEnd)
	le.PutUint64(b[40:], h.closedEnd)
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

// decodeLogHeader decodes and checks the header at the start of b.
func decodeLogHeader(b []byte) (logHeader, error) {
	le := binary.LittleEndian
	if len(b) < logHeaderSize {
		return logHeader{}, fmt.Errorf("file is %d bytes, shorter than the %d-byte header (truncated)", len(b), logHeaderSize)
	}
	if string(b[:8]) != logMagic {
		return logHeader{}, errors.New("bad magic: not a log store")
	}
	if sum := crc32.Checksum(b[:60], castagnoli); le.Uint32(b[60:]) != sum {
		return logHeader{}, errors.New("header checksum mismatch")
	}
	if v := le.Uint32(b[8:]); v != logVersion {
		return logHeader{}, fmt.Errorf("log format version %d, this version reads %d", v, logVersion)
	}
	if n := le.Uint32(b[12:]); n != logHeaderSize {
		return logHeader{}, fmt.Errorf("header length %d, want %d", n, logHeaderSize)
	}
	h := logHeader{firstSeq: le.Uint64(b[16:]), snapRecords: le.Uint64(b[24:]), snapEnd: le.Uint64(b[32:]), closedEnd: le.Uint64(b[40:])}
	if h.closedEnd != 0 && h.closedEnd < h.snapEnd {
		return logHeader{}, fmt.Errorf("closed end %d before the snapshot end %d", h.closedEnd, h.snapEnd)
	}
	if h.snapEnd < logHeaderSize {
		return logHeader{}, fmt.Errorf("snapshot end %d inside the header", h.snapEnd)
	}
	if h.firstSeq == 0 {
		return logHeader{}, errors.New("first log sequence is 0")
	}
	return h, nil
}

// fits checks that a file of size bytes holds what the header says it
// does.
func (h logHeader) fits(size int64) error {
	if h.closedEnd > uint64(size) {
		return fmt.Errorf("the file is %d bytes, but the store was closed with %d bytes of whole records: "+
			"it was cut short (truncated, or copied incompletely) since, and the commits in its last %d bytes are lost; "+
			"restore the file from a copy", size, h.closedEnd, h.closedEnd-uint64(size))
	}
	if h.snapEnd > uint64(size) {
		return fmt.Errorf("the file is %d bytes, shorter than its snapshot (%d bytes): it was cut short (truncated)", size, h.snapEnd)
	}
	return nil
}

// appendRecord appends a record holding payload (kind byte included) to dst.
func appendRecord(dst []byte, seq uint64, payload []byte) []byte {
	le := binary.LittleEndian
	start := len(dst)
	dst = append(dst, recMagic...)
	dst = le.AppendUint32(dst, uint32(len(payload)))
	dst = le.AppendUint32(dst, 0) // CRC, below
	dst = le.AppendUint64(dst, seq)
	dst = append(dst, payload...)
	le.PutUint32(dst[start+8:], recordCRC(dst[start:]))
	return dst
}

// recordCRC checksums a record's length, seq and payload; rec starts at the
// record's magic and holds all of it.
func recordCRC(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[4:8])
	return crc32.Update(c, castagnoli, rec[12:])
}

func appendPutOp(dst []byte, b bucketID, k, v []byte) []byte {
	dst = append(dst, opPut, byte(b))
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

func appendDelOp(dst []byte, b bucketID, k []byte) []byte {
	dst = append(dst, opDel, byte(b))
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	return append(dst, k...)
}

// entrySize is what a live key and value cost in a snapshot: the bytes of
// its put operation, about.
func entrySize(it memItem) int64 { return int64(len(it.key()) + it.size() + 6) }

// logRecord is a record found by readRecord.
type logRecord struct {
	seq     uint64
	kind    byte
	ops     []byte // the operations, a slice of the buffer read
	end     int64  // offset just past the record
	payload int    // payload length
}

// readRecord parses the record at off in buf (the whole file). It returns a
// reason when the bytes there are not a whole, intact record.
func readRecord(buf []byte, off int64) (logRecord, string) {
	rest := buf[off:]
	if len(rest) < recHeaderSize {
		return logRecord{}, fmt.Sprintf("only %d bytes left, a record header is %d", len(rest), recHeaderSize)
	}
	if string(rest[:4]) != recMagic {
		return logRecord{}, fmt.Sprintf("no record magic (found % x)", rest[:4])
	}
	le := binary.LittleEndian
	n := int64(le.Uint32(rest[4:]))
	if n < 1 || n > maxRecordLen {
		return logRecord{}, fmt.Sprintf("implausible record length %d", n)
	}
	if int64(len(rest)) < recHeaderSize+n {
		return logRecord{}, fmt.Sprintf("record of %d bytes but only %d left in the file", recHeaderSize+n, len(rest))
	}
	rec := rest[:recHeaderSize+n]
	if got, want := le.Uint32(rec[8:]), recordCRC(rec); got != want {
		return logRecord{}, fmt.Sprintf("checksum mismatch (stored %#08x, computed %#08x)", got, want)
	}
	return logRecord{
		seq:     le.Uint64(rec[12:]),
		kind:    rec[recHeaderSize],
		ops:     rec[recHeaderSize+1:],
		end:     off + recHeaderSize + n,
		payload: int(n),
	}, ""
}

// nextValidRecord returns the offset of the first intact record that
// starts after off, or -1. It tells damage (good data follows the bad
// record) from an interrupted last write (nothing does).
func nextValidRecord(buf []byte, off int64) int64 {
	for from := off + 1; from < int64(len(buf)); {
		i := bytes.Index(buf[from:], []byte(recMagic))
		if i < 0 {
			return -1
		}
		at := from + int64(i)
		if _, bad := readRecord(buf, at); bad == "" {
			return at
		}
		from = at + 1
	}
	return -1
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// applyOps replays a record's operations through put and del. Their
// arguments are slices of ops, which put and del copy what they keep out
// of; at is the offset of the value in ops.
func applyOps(ops []byte, put func(b bucketID, k, v []byte, at int), del func(b bucketID, k []byte)) error {
	all := len(ops)
	for len(ops) > 0 {
		if len(ops) < 2 {
			return errors.New("operation cut short")
		}
		op, b := ops[0], bucketID(ops[1])
		if b >= numBuckets {
			return fmt.Errorf("unknown bucket %d", ops[1])
		}
		ops = ops[2:]
		k, rest, ok := readBytes(ops)
		if !ok || len(k) == 0 {
			return errors.New("bad key")
		}
		switch op {
		case opPut:
			v, rest2, ok := readBytes(rest)
			if !ok {
				return errors.New("bad value")
			}
			put(b, k, v, all-len(rest2)-len(v))
			ops = rest2
		case opDel:
			del(b, k)
			ops = rest
		default:
			return fmt.Errorf("unknown operation %#x", op)
		}
	}
	return nil
}

func readBytes(b []byte) ([]byte, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

// ErrTornTail is returned by Open, together with ErrCorrupt, for a log
// store whose last record is incomplete: what a crash in the middle of a
// write leaves. Config.RepairTornTail drops that record.
var ErrTornTail = errors.New("localworld: the last record is incomplete")

// tornTailError reports an incomplete last record; it matches ErrTornTail
// and ErrCorrupt.
type tornTailError struct {
	path   string
	off    int64
	size   int64
	reason string
}

func (e *tornTailError) Error() string {
	return fmt.Sprintf("localworld: open %s: the last record, at offset %d (the last %d bytes of the file), is incomplete: %s. "+
		"This is what a crash in the middle of a write leaves; that commit was never acknowledged, and every commit before it is intact. "+
		"Set Config.RepairTornTail = true to drop it (the file was left untouched)", e.path, e.off, e.size-e.off, e.reason)
}

func (e *tornTailError) Is(target error) bool { return target == ErrTornTail || target == ErrCorrupt }

// cutShort reports whether the file (buf) ends inside the record that
// starts at off: its header is cut by the end of the file, or says it is
// need bytes long and the file holds fewer. That is what a truncation
// leaves, never a crash (see the format above). Bytes that do not start
// like a record are not cut short: a torn write may leave anything where
// it stopped.
func cutShort(buf []byte, off int64) (need int64, cut bool) {
	rest := buf[off:]
	if len(rest) < recHeaderSize {
		m := min(len(rest), len(recMagic))
		return recHeaderSize, string(rest[:m]) == recMagic[:m]
	}
	if string(rest[:len(recMagic)]) != recMagic {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint32(rest[4:]))
	if n < 1 || n > maxRecordLen {
		return 0, false
	}
	return recHeaderSize + n, int64(len(rest)) < recHeaderSize+n
}

// truncatedError reports a log file that ends inside its last record. It
// matches ErrCorrupt, not ErrTornTail: it is no interrupted write, and
// Config.RepairTornTail does not drop it.
type truncatedError struct {
	path      string
	off, need int64
	size      int64
	seq       uint64
}

func (e *truncatedError) Error() string {
	return fmt.Sprintf("%v: open %s: the file ends inside its last record (seq %d, at offset %d: %d bytes, of which the file holds %d): "+
		"it was cut short (truncated, or copied incompletely), which a crash does not do (each record is written into space "+
		"allocated ahead of it), so later commits may be lost too. Restore the file from a copy "+
		"(its first %d bytes are intact; the file was left untouched)",
		ErrCorrupt, e.path, e.seq, e.off, e.need, e.size-e.off, e.off)
}

func (e *truncatedError) Is(target error) bool { return target == ErrCorrupt }

// replayed is what replaying a log file found.
type replayed struct {
	header  logHeader
	end     int64  // offset just past the last whole record
	nextSeq uint64 // seq of the next commit record
	live    int64  // entrySize summed over the live keys
	records int    // commit records replayed
	torn    *tornTailError
}

// apply replays the operations of rec, the record at offset off of the
// file, into the trees of s, keeping the live size. In a store with a file,
// the values that go there are read from it from then on (spill.go).
func (r *replayed) apply(s *memStore, rec logRecord, off int64) error {
	opsAt := off + recHeaderSize + 1
	put := func(b bucketID, k, v []byte, at int) {
		var it memItem
		if s.disk != nil && goesToDisk(b, len(v)) {
			it = diskItem(k, v, opsAt+int64(at))
		} else {
			it = ownedItem(k, v)
		}
		old, existed := s.buckets[b].ReplaceOrInsert(it)
		r.live += entrySize(it)
		if existed {
			r.live -= entrySize(old)
		}
	}
	del := func(b bucketID, k []byte) {
		if old, existed := s.buckets[b].Delete(keyItem(k)); existed {
			r.live -= entrySize(old)
		}
	}
	return applyOps(rec.ops, put, del)
}

// replayLog checks and replays buf, the whole file, into the trees of s:
// the header, then the snapshot records, then the commit records in order,
// each with its checksum and sequence. Damage is ErrCorrupt naming the
// offset; an incomplete last record (nothing intact after it) is returned
// in torn, with the records before it replayed.
func replayLog(path string, buf []byte, s *memStore) (replayed, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: open %s: %s (the file was left untouched)", ErrCorrupt, path, fmt.Sprintf(format, args...))
	}
	size := int64(len(buf))
	h, err := decodeLogHeader(buf)
	if err != nil {
		return replayed{}, corrupt("header: %v", err)
	}
	if err := h.fits(size); err != nil {
		return replayed{}, corrupt("%v", err)
	}
	r := replayed{header: h}
	off := int64(logHeaderSize)
	for i := uint64(1); i <= h.snapRecords; i++ {
		rec, bad := readRecord(buf[:h.snapEnd], off)
		switch {
		case bad != "":
			return replayed{}, corrupt("snapshot record %d of %d at offset %d: %s", i, h.snapRecords, off, bad)
		case rec.seq != i || rec.kind != recKindSnapshot:
			return replayed{}, corrupt("snapshot record at offset %d: seq %d kind %d, want seq %d kind %d", off, rec.seq, rec.kind, i, recKindSnapshot)
		}
		if err := r.apply(s, rec, off); err != nil {
			return replayed{}, corrupt("snapshot record at offset %d: %v", off, err)
		}
		off = rec.end
	}
	if off != int64(h.snapEnd) {
		return replayed{}, corrupt("the snapshot ends at offset %d, the header says %d", off, h.snapEnd)
	}

	seq := h.firstSeq
	for off < size {
		rec, bad := readRecord(buf, off)
		if bad == "" && rec.seq == seq && rec.kind == recKindCommit {
			if err := r.apply(s, rec, off); err != nil {
				return replayed{}, corrupt("record at offset %d (seq %d): %v", off, seq, err)
			}
			off, seq = rec.end, seq+1
			r.records++
			continue
		}
		if off < int64(h.closedEnd) {
			if bad == "" {
				bad = fmt.Sprintf("seq %d kind %d, want seq %d kind %d", rec.seq, rec.kind, seq, recKindCommit)
			}
			return replayed{}, corrupt("record at offset %d (seq %d): %s; the store was closed with %d bytes of whole records, so this is damage, not an interrupted write",
				off, seq, bad, h.closedEnd)
		}
		if allZero(buf[off:]) {
			break // space allocated ahead of the writes
		}
		if bad == "" {
			return replayed{}, corrupt("record at offset %d: seq %d kind %d, want seq %d kind %d", off, rec.seq, rec.kind, seq, recKindCommit)
		}
		if next := nextValidRecord(buf, off); next >= 0 {
			return replayed{}, corrupt("record at offset %d (seq %d): %s; an intact record follows at offset %d, so this is damage, not an interrupted write", off, seq, bad, next)
		}
		if need, cut := cutShort(buf, off); cut {
			return replayed{}, &truncatedError{path: path, off: off, need: need, size: size, seq: seq}
		}
		r.torn = &tornTailError{path: path, off: off, size: size, reason: bad}
		break
	}
	r.end, r.nextSeq = off, seq
	return r, nil
}
