package localworld

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/btree"
)

// Compaction rewrites a log store as a snapshot of its live data when the
// log has grown past max(Config compactMin (64 MiB), twice the live data):
//
//  1. Under the write lock, after a commit: clone the B-trees (copy on
//     write, O(1)) and note the log's end and next sequence.
//  2. In the background, while commits go on: write the clones as snapshot
//     records to a temporary file beside the store (locked, like the
//     store), write its header, fsync it.
//     Build new B-trees meanwhile, as Open would from that file: their
//     values on disk are in it (spill.go).
//  3. Under the write lock: copy the records committed since step 1, bytes
//     as they are, after the snapshot, and replay them into the new trees;
//     fsync; rename the file over the store; fsync the directory; then
//     read and append to the new file, through the new trees.
//
// Until the rename the store's file is untouched and complete, so a crash
// leaves it as it was plus an orphaned temporary file, which the next Open
// removes. The rename replaces one complete file with another that holds
// the same commits. Commits wait for step 3 only, whose copy is short; the
// directory is synced before any commit goes to the new file, so no commit
// depends on a rename a machine crash could undo.

const (
	compactSuffix      = ".compact-"
	snapshotRecordSize = 1 << 20 // payload bytes per snapshot record, about
)

var errCompactStopped = errors.New("the store is closing")

type compactJob struct {
	trees    [numBuckets]*btree.BTreeG[memItem]
	f        *os.File // the file the trees' values on disk are in
	firstSeq uint64   // seq of the first record after the snapshot
	from     int64    // log offset of that record
}

// maybeCompact starts a compaction when one is due. Called with mem.mu
// held, after a commit.
func (s *logStore) maybeCompact() {
	if s.compacting || s.stop.Load() || s.end < s.compactAfter || s.end <= max(s.compactMin, 2*s.live) {
		return
	}
	job := &compactJob{f: s.f, firstSeq: s.nextSeq, from: s.end}
	for i := range job.trees {
		job.trees[i] = s.mem.buckets[i].Clone()
	}
	s.compacting = true
	s.logger.LogAttrs(context.Background(), slog.LevelDebug, "localworld: compaction started",
		slog.String("path", s.path), slog.Int64("bytes", s.end), slog.Int64("liveBytes", s.live))
	s.compactWG.Add(1)
	go func() { _ = s.compact(job) }() // a failure is logged
}

// compact runs job: the store switches to the new file, or stays as it was
// and the error is logged and returned.
func (s *logStore) compact(job *compactJob) error {
	defer s.compactWG.Done()
	start := time.Now()
	next := newMemStore()
	tmp, snapEnd, err := s.writeSnapshot(job, next)
	job.trees = [numBuckets]*btree.BTreeG[memItem]{}

	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	s.compacting = false
	before := s.end
	if err == nil {
		err = s.switchTo(tmp, job, snapEnd, next)
	}
	if err != nil && errors.Is(err, ErrCorrupt) {
		s.mem.noteDamage(err)
	}
	if err != nil {
		s.compactAfter = 2 * s.end // try again when the log has doubled
		switch {
		case s.stop.Load():
		case errors.Is(err, ErrCorrupt):
			s.logger.LogAttrs(context.Background(), slog.LevelError, "localworld: the store file is damaged; it takes no more writes (restore it from a copy)",
				slog.String("path", s.path), slog.Any("err", err))
		default:
			s.logger.LogAttrs(context.Background(), slog.LevelWarn, "localworld: compaction failed; the store is unchanged",
				slog.String("path", s.path), slog.Any("err", err))
		}
		return err
	}
	s.compactAfter = 0
	s.compactions.Add(1)
	s.logger.LogAttrs(context.Background(), slog.LevelInfo, "localworld: compacted the log",
		slog.String("path", s.path), slog.Int64("before", before), slog.Int64("after", s.end),
		slog.Int64("liveBytes", s.live), slog.Duration("took", time.Since(start)))
	return nil
}

// writeSnapshot writes the cloned trees to a new temporary file as
// snapshot records, then the header, and syncs it. It returns the file,
// open and locked, and the offset where the snapshot ends.
func (s *logStore) writeSnapshot(job *compactJob, next *memStore) (*os.File, int64, error) {
	tmp, err := os.CreateTemp(s.dir, filepath.Base(s.file)+compactSuffix+"*")
	if err != nil {
		return nil, 0, err
	}
	end, err := s.writeSnapshotTo(tmp, job, next)
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, 0, err
	}
	return tmp, end, nil
}

// writeSnapshotTo writes the snapshot records to tmp. When next is not nil,
// it also fills next's trees with the items Open would make of them.
func (s *logStore) writeSnapshotTo(tmp *os.File, job *compactJob, next *memStore) (int64, error) {
	// Once renamed, this is the store: it must be locked already.
	if err := lockExclusive(tmp, 0); err != nil {
		return 0, err
	}
	if fi, err := os.Stat(s.file); err == nil {
		_ = tmp.Chmod(fi.Mode().Perm())
	}
	off := int64(logHeaderSize)
	seq := uint64(1)
	payload := []byte{recKindSnapshot}
	var rec []byte
	var placed []placedItem // the payload's items, for next
	flush := func() error {
		rec = appendRecord(rec[:0], seq, payload)
		if _, err := tmp.WriteAt(rec, off); err != nil {
			return err
		}
		for _, p := range placed {
			next.buckets[p.b].ReplaceOrInsert(p.item(off + recHeaderSize))
		}
		placed = placed[:0]
		off += int64(len(rec))
		seq++
		payload = payload[:1]
		return nil
	}
	for b, t := range job.trees {
		var werr error
		t.Ascend(func(it memItem) bool {
			v := it.val()
			if it.onDisk() {
				if v, werr = readValue(job.f, s.path, bucketID(b), it.key(), it.ref()); werr != nil {
					return false
				}
			}
			payload = appendPutOp(payload, bucketID(b), it.key(), v)
			if next != nil {
				placed = append(placed, placeItem(bucketID(b), it, v, len(payload)-len(v)))
			}
			if len(payload) >= snapshotRecordSize {
				if s.stop.Load() {
					werr = errCompactStopped
				} else {
					werr = flush()
				}
			}
			return werr == nil
		})
		if werr != nil {
			return 0, werr
		}
	}
	if len(payload) > 1 {
		if err := flush(); err != nil {
			return 0, err
		}
	}
	h := logHeader{firstSeq: job.firstSeq, snapRecords: seq - 1, snapEnd: uint64(off)}
	if _, err := tmp.WriteAt(h.encode(), 0); err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, err
	}
	return off, nil
}

// placedItem is an item written to a snapshot record, at pos in its
// payload.
type placedItem struct {
	b   bucketID
	it  memItem  // the item, when its value stays in memory
	ref valueRef // else where the value is, its offset in the payload
}

// placeItem notes the item it, whose value is v, written at pos of a
// snapshot record's payload: what Open would keep of it.
func placeItem(b bucketID, it memItem, v []byte, pos int) placedItem {
	if !goesToDisk(b, len(v)) {
		if it.onDisk() {
			it = ownedItem(it.key(), v)
		}
		return placedItem{b: b, it: it}
	}
	r := valueRef{off: int64(pos), n: uint32(len(v))}
	if it.onDisk() {
		r.crc = it.ref().crc // v was checked against it
	} else {
		r.crc = crc32.Checksum(v, castagnoli)
	}
	return placedItem{b: b, it: it, ref: r}
}

// item is the placed item of a record whose payload starts at offset at.
func (p placedItem) item(at int64) memItem {
	if p.ref.n == 0 {
		return p.it
	}
	r := p.ref
	r.off += at
	return refItem(p.it.key(), r)
}

// switchTo finishes a compaction: it appends to tmp the records committed
// since the snapshot and replays them into next (the snapshot's trees),
// syncs tmp, renames it over the store, syncs the directory, and takes
// next's trees as the store's. Called with mem.mu held. On failure before
// the rename, tmp is removed and the store is unchanged.
func (s *logStore) switchTo(tmp *os.File, job *compactJob, snapEnd int64, next *memStore) error {
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := s.writable(); err != nil {
		return fail(err)
	}
	if s.stop.Load() {
		return fail(errCompactStopped)
	}
	next.disk, next.diskName = tmp, s.path
	if n := s.end - job.from; n > 0 {
		tail := make([]byte, n)
		if _, err := s.f.ReadAt(tail, job.from); err != nil {
			return fail(fmt.Errorf("read the records committed meanwhile: %w", err))
		}
		if err := replayTail(next, tail, snapEnd, job.firstSeq); err != nil {
			return fail(err)
		}
		if _, err := tmp.WriteAt(tail, snapEnd); err != nil {
			return fail(err)
		}
		if err := tmp.Sync(); err != nil {
			return fail(err)
		}
	}
	end := snapEnd + s.end - job.from
	if err := os.Rename(tmp.Name(), s.file); err != nil {
		return fail(err)
	}
	// The path names the new file now: commits go there, whatever follows.
	old := s.f
	s.f, s.end, s.alloc = tmp, end, end
	s.mem.buckets, s.mem.disk, s.mem.diskName = next.buckets, tmp, s.path
	s.spills.reset()
	_ = old.Close()
	if err := syncDir(s.dir); err != nil {
		s.failed = fmt.Errorf("localworld: %s: compaction could not sync the directory, so the store takes no more writes (reopen it): %w", s.path, err)
		return s.failed
	}
	return nil
}

// replayTail replays into next the commit records in tail, which starts at
// offset base of the new file with the record of sequence seq.
func replayTail(next *memStore, tail []byte, base int64, seq uint64) error {
	var r replayed
	for off := int64(0); off < int64(len(tail)); seq++ {
		rec, bad := readRecord(tail, off)
		if bad == "" && (rec.seq != seq || rec.kind != recKindCommit) {
			bad = fmt.Sprintf("seq %d kind %d, want seq %d kind %d", rec.seq, rec.kind, seq, recKindCommit)
		}
		if bad != "" {
			return fmt.Errorf("the records committed meanwhile, at their offset %d: %s", off, bad)
		}
		if err := r.apply(next, rec, base+off); err != nil {
			return fmt.Errorf("the records committed meanwhile, at their offset %d: %w", off, err)
		}
		off = rec.end
	}
	return nil
}
