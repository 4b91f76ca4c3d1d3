package localworld

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// logStore is the kvStore of a file store: the data lives in memStore's
// B-trees, and the file is a log of their changes (logfile.go), which
// the trees read older values back from (spill.go). A write
// transaction runs on the trees like memStore's, recording its puts and
// deletes; its commit appends them to the file as one record, written with
// one write call, then fdatasyncs (SyncEveryCommit, SyncBatch) before the
// caller returns. The trees' write lock is held until then, so no reader
// ever sees a write that is not yet durable.
//
// Commits that sync (SyncEveryCommit and SyncBatch alike) go through group
// commit: concurrent writers share a commit. The first one in commits at
// once, running every transaction queued so far, one after the other, and
// appending all their writes as one record with one fdatasync; those that
// arrive meanwhile queue for the next commit. A transaction that fails is
// rolled back alone (its undo log), so no
// transaction is ever run twice and a refusal costs the others nothing:
// the two policies give the same guarantee at the same cost, and are one.
// Under SyncNone a commit writes alone, without a sync.
//
// The file grows in chunks of zeros written ahead (then one fsync per
// chunk), so that a commit overwrites blocks the file system has allocated
// and written already: its fdatasync has no file size, block map or extent
// state to record, only the data. Appending instead changes the size at
// every commit, and fallocate'd space must be converted from unwritten at
// the first write to each block; both cost a journal commit inside the
// fdatasync (BenchmarkLogAllocation: for a serial step's 2.8 KB record,
// zeros ahead are about 30% faster than fallocate and 50% faster than
// appending). The log ends at the first all-zero record header; Close
// trims the unused space.
type logStore struct {
	mem  *memStore
	path string // as the caller named it, for messages
	// file is the file path names, its symbolic links resolved: the name a
	// compaction renames its new file to, in the directory dir, so that a
	// symlinked store stays a symlink to the compacted file.
	file   string
	dir    string
	sync   SyncPolicy
	group  bool
	logger *slog.Logger

	allocMode   allocMode
	compactMin  int64
	spillWindow int64

	// Guarded by mem.mu (the write lock).
	f            *os.File
	end          int64  // offset after the last record
	alloc        int64  // file size: end plus space allocated ahead
	nextSeq      uint64 // seq of the next commit record
	live         int64  // entrySize summed over the live keys
	failed       error  // an I/O failure: every later write fails with it
	rec          []byte // record buffer, reused
	compacting   bool
	compactAfter int64 // no compaction before the log reaches this size

	stop        atomic.Bool // Close was called: compaction gives up
	compactWG   sync.WaitGroup
	compactions atomic.Int64 // finished, for tests

	gmu     sync.Mutex
	queue   []*logCall
	leading bool

	// spills: the values the last commits wrote that go to disk once
	// newer ones fill the window (spill.go). Guarded by mem.mu.
	spills spillQueue
}

// logTx is a write transaction: memStore's, plus the writes it commits
// and the change in live size they make. A key written several times in
// one transaction is logged once, with its last write (writes on different
// keys commute, so their order in the record does not matter).
type logTx struct {
	memTx
	writes []logWrite
	index  map[string]int // bucket and key -> index in writes, past smallWrites
	delta  int64
}

// logWrite is one key's last write in a transaction.
type logWrite struct {
	b    bucketID
	k, v []byte
	del  bool
}

// smallWrites is how many writes a transaction looks through one by one
// for an earlier write of the same key before it indexes them.
const smallWrites = 32

func (s *logStore) newTx() *logTx {
	return &logTx{memTx: memTx{s: s.mem, writable: true}}
}

// record notes the write of key k in bucket b, replacing an earlier write
// of it in the transaction.
func (t *logTx) record(w logWrite) {
	if t.index == nil && len(t.writes) < smallWrites {
		for i := range t.writes {
			if t.writes[i].b == w.b && bytes.Equal(t.writes[i].k, w.k) {
				t.writes[i] = w
				return
			}
		}
		t.writes = append(t.writes, w)
		return
	}
	if t.index == nil {
		t.index = make(map[string]int, 2*len(t.writes))
		for i, x := range t.writes {
			t.index[writeKey(x.b, x.k)] = i
		}
	}
	id := writeKey(w.b, w.k)
	if i, ok := t.index[id]; ok {
		t.writes[i] = w
		return
	}
	t.index[id] = len(t.writes)
	t.writes = append(t.writes, w)
}

func writeKey(b bucketID, k []byte) string { return string(append([]byte{byte(b)}, k...)) }

// appendOps appends the transaction's writes to rec, a record to be
// written at offset at, and queues the values that go to disk later with
// their offsets (spill.go).
func (t *logTx) appendOps(rec []byte, q *spillQueue, at int64) []byte {
	for _, w := range t.writes {
		if w.del {
			rec = appendDelOp(rec, w.b, w.k)
			continue
		}
		rec = appendPutOp(rec, w.b, w.k, w.v)
		if goesToDisk(w.b, len(w.v)) {
			q.push(spilled{b: w.b, k: w.k, v: w.v, off: at + int64(len(rec)-len(w.v))})
		}
	}
	return rec
}

func (t *logTx) put(b bucketID, k, v []byte) error {
	old, had := t.memTx.item(b, k)
	it, err := t.memTx.putItem(b, k, v)
	if err != nil {
		return err
	}
	// The log is written at commit and the spill queue keeps values
	// longer: both take the store's copies, the caller's may be reused
	// (putEncoded).
	t.record(logWrite{b: b, k: it.key(), v: it.val()})
	t.delta += entrySize(it)
	if had {
		t.delta -= entrySize(old)
	}
	return nil
}

func (t *logTx) del(b bucketID, k []byte) error {
	old, err := t.memTx.delItem(b, k)
	if err != nil || old.p == nil {
		return err
	}
	t.record(logWrite{b: b, k: old.key(), del: true})
	t.delta -= entrySize(old)
	return nil
}

func (s *logStore) view(fn func(kvTx) error) error { return s.mem.view(fn) }

func (s *logStore) update(fn func(kvTx) error) error {
	if s.group {
		return s.groupUpdate(fn)
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	tx := s.newTx()
	if err := runTx(tx, fn); err != nil {
		return err
	}
	return s.commit([]*logTx{tx})
}

// runTx runs fn in tx, rolling tx back when fn fails or panics (the panic
// goes on).
func runTx(tx *logTx, fn func(kvTx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tx.rollback()
			panic(r)
		}
	}()
	if err := fn(tx); err != nil {
		tx.rollback()
		return err
	}
	return nil
}

// writable reports why the store takes no writes, if it does not. Called
// with mem.mu held.
func (s *logStore) writable() error {
	switch {
	case s.mem.closed:
		return errStoreClosed
	case s.failed != nil:
		return s.failed
	case s.mem.damage.Load() != nil:
		return fmt.Errorf("localworld: %s: the file is damaged, so it takes no more writes: it would not open again, "+
			"and what it took would be lost with it. Stop, and restore the file from a copy: %w", s.path, *s.mem.damage.Load())
	}
	return nil
}

// commit appends the operations of txs, which ran in this order and left
// their writes in the trees, as one record and makes it durable per the
// sync policy. On failure it rolls them all back. Called with mem.mu held.
func (s *logStore) commit(txs []*logTx) error {
	n := 0
	for _, tx := range txs {
		n += len(tx.writes)
	}
	if n == 0 {
		return nil // nothing written: nothing to log
	}
	rec := append(s.rec[:0], zeroRecHeader[:]...)
	rec = append(rec, recKindCommit)
	var delta int64
	spillFrom := len(s.spills.q)
	for _, tx := range txs {
		rec = tx.appendOps(rec, &s.spills, s.end)
		delta += tx.delta
	}
	sealRecord(rec, s.nextSeq)
	if cap(rec) <= 1<<20 {
		s.rec = rec
	}
	var err error
	if len(rec)-recHeaderSize > maxRecordLen {
		err = fmt.Errorf("localworld: %s: a commit of %d bytes is larger than a record can be (%d)", s.path, len(rec), maxRecordLen)
	} else {
		err = s.append(rec)
	}
	if err != nil {
		s.spills.drop(spillFrom)
		for i := len(txs) - 1; i >= 0; i-- {
			txs[i].rollback()
		}
		return err
	}
	s.nextSeq++
	s.live += delta
	s.spill()
	s.maybeCompact()
	return nil
}

var zeroRecHeader [recHeaderSize]byte

// sealRecord fills in the header of rec, which holds a header's worth of
// space and then the payload.
func sealRecord(rec []byte, seq uint64) {
	le := binary.LittleEndian
	copy(rec, recMagic)
	le.PutUint32(rec[4:], uint32(len(rec)-recHeaderSize))
	le.PutUint64(rec[12:], seq)
	le.PutUint32(rec[8:], recordCRC(rec))
}

// append writes rec at the end of the log and syncs it. A failure before
// the write (allocating space) leaves the file as it was; a failed write or
// sync leaves it unknown, so the store refuses every later write: its file
// and memory may disagree until it is reopened.
func (s *logStore) append(rec []byte) error {
	need := s.end + int64(len(rec))
	if s.allocMode != allocNone && need > s.alloc {
		size := roundUp(need+allocChunk(s.end), 1<<20)
		err := s.allocate(size)
		if err == nil && s.sync != SyncNone {
			err = s.f.Sync() // the new blocks and size, once per chunk
		}
		if err != nil {
			return fmt.Errorf("localworld: %s: allocate space: %w", s.path, err)
		}
		s.alloc = size
	}
	_, err := s.f.WriteAt(rec, s.end)
	if err == nil && s.sync != SyncNone {
		err = fdatasync(s.f)
	}
	if err != nil {
		s.failed = fmt.Errorf("localworld: %s: a write to the store failed, so it takes no more writes (reopen it; the failed commit may or may not be there): %w", s.path, err)
		s.logger.LogAttrs(context.Background(), slog.LevelError, "localworld: write failed", slog.String("path", s.path), slog.Any("err", err))
		return s.failed
	}
	s.end = need
	s.alloc = max(s.alloc, s.end)
	return nil
}

// allocate grows the file to size bytes ahead of the writes.
func (s *logStore) allocate(size int64) error {
	if s.allocMode == allocFallocate {
		return preallocate(s.f, size)
	}
	zeros := make([]byte, min(size-s.alloc, 1<<20))
	for off := s.alloc; off < size; {
		n, err := s.f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
		if err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// allocChunk is how far ahead of end the file is allocated: an eighth of
// the log, between 1 and 4 MiB (writing 4 MiB of zeros and syncing them
// takes about 7 ms here, once per 1,500 serial steps).
func allocChunk(end int64) int64 { return min(max(end/8, 1<<20), 4<<20) }

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// logCall is a transaction waiting for a group commit.
type logCall struct {
	fn   func(kvTx) error
	done chan logResult
}

type logResult struct {
	err      error
	lead     bool // run the next batch
	panicked bool
	panicVal any
}

// groupUpdate is update with group commit, leader-based: the first caller commits at once with every call queued,
// callers that arrive meanwhile queue for the next batch.
func (s *logStore) groupUpdate(fn func(kvTx) error) error {
	call := &logCall{fn: fn, done: make(chan logResult, 1)}
	s.gmu.Lock()
	s.queue = append(s.queue, call)
	lead := !s.leading
	s.leading = true
	s.gmu.Unlock()
	for {
		if lead {
			s.lead()
		}
		res := <-call.done
		switch {
		case res.lead:
			lead = true
		case res.panicked:
			panic(res.panicVal) // in the goroutine whose function panicked
		default:
			return res.err
		}
	}
}

func (s *logStore) lead() {
	// Let the writers the last commit just released queue their next
	// transaction first: without this, batches alternate between full and
	// half empty. With no other goroutine runnable it returns at once.
	runtime.Gosched()
	s.gmu.Lock()
	batch := s.queue
	s.queue = nil
	s.gmu.Unlock()

	s.runBatch(batch)

	s.gmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- logResult{lead: true}
	} else {
		s.leading = false
	}
	s.gmu.Unlock()
}

// runBatch runs the calls one after the other, each in its own transaction
// (a failed or panicking one is rolled back at once, before the next runs),
// and commits the others as one record. Every call gets one answer, and
// only once the record is durable: even a call that wrote nothing may have
// read what an earlier one in the batch wrote.
func (s *logStore) runBatch(batch []*logCall) {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if err := s.writable(); err != nil {
		for _, c := range batch {
			c.done <- logResult{err: err}
		}
		return
	}
	var txs []*logTx
	var waiting []*logCall
	for _, c := range batch {
		tx := s.newTx()
		if res, ok := runSafely(tx, c.fn); !ok {
			c.done <- res
			continue
		}
		txs = append(txs, tx)
		waiting = append(waiting, c)
	}
	err := s.commit(txs)
	for _, c := range waiting {
		c.done <- logResult{err: err}
	}
}

// runSafely runs fn in tx and reports whether it succeeded; otherwise tx
// is rolled back and the result carries the error or the panic.
func runSafely(tx *logTx, fn func(kvTx) error) (res logResult, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			tx.rollback()
			res, ok = logResult{panicked: true, panicVal: r}, false
		}
	}()
	if err := fn(tx); err != nil {
		tx.rollback()
		return logResult{err: err}, false
	}
	return logResult{}, true
}

// close stops a compaction in progress, trims the space allocated ahead,
// and closes the file, which releases the lock.
func (s *logStore) close() error {
	s.stop.Store(true)
	s.mem.mu.Lock()
	if s.mem.closed {
		s.mem.mu.Unlock()
		return nil
	}
	var err error
	if s.failed == nil && s.alloc > s.end {
		err = s.f.Truncate(s.end)
		if err == nil && s.sync != SyncNone {
			err = s.f.Sync()
		}
	}
	if err == nil && s.failed == nil {
		err = markClosed(s.f, s.end, s.sync != SyncNone)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.mem.closeLocked()
	s.mem.mu.Unlock()
	s.compactWG.Wait()
	return err
}

// markClosed records in the header of the log file f that its log ends at
// end, all whole records (the "closed end": a later Open tells damage and
// truncation before it from a torn write), and syncs it when sync. The
// header is 64 bytes at the start of the first sector, written in one
// call, as a meta page of bbolt was: a write the device does whole or not
// at all.
func markClosed(f *os.File, end int64, sync bool) error {
	b := make([]byte, logHeaderSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return fmt.Errorf("localworld: %s: read the header: %w", f.Name(), err)
	}
	h, err := decodeLogHeader(b)
	if err != nil {
		return fmt.Errorf("localworld: %s: the header: %w", f.Name(), err)
	}
	if h.closedEnd == uint64(end) {
		return nil
	}
	h.closedEnd = uint64(end)
	if _, err := f.WriteAt(h.encode(), 0); err != nil {
		return fmt.Errorf("localworld: %s: write the header: %w", f.Name(), err)
	}
	if sync {
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("localworld: %s: sync the header: %w", f.Name(), err)
		}
	}
	return nil
}

// compactLeftovers lists the temporary files of compactions that did not
// finish (the process died). Only the holder of the store's lock makes
// them, so the holder may delete them.
func compactLeftovers(path string) []string {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+compactSuffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
