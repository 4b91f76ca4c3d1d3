package localworld

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrReadOnly is returned by every write to a World opened with
// Config.ReadOnly.
var ErrReadOnly = errors.New("localworld: the store is open read-only")

// roLogStore is the kvStore of a log store opened with Config.ReadOnly: a
// view of a file another process may be writing. It takes no lock and
// never writes. Before every read it brings its trees up to date with the
// file (refresh):
//
//   - the records appended since the last look are replayed, up to the
//     first one that is not whole and intact: the writer appends a record
//     with one write call, so a record half there is one being written,
//     read at the next look;
//   - when the path names another file than the one open (a compaction
//     renamed a new file over it, or the store was made again), the new
//     file is read from its start. The old file stays readable through its
//     descriptor and is a prefix of the same history, so a read in between
//     sees an earlier state, never a wrong one.
//
// A snapshot whose header or snapshot records do not check is ErrCorrupt,
// as at Open; a damaged record in the middle of the log is only ever
// reached as "not yet whole" here, and Open (with the lock) is what
// reports it.
type roLogStore struct {
	path string

	mu      sync.Mutex // serialises refresh; guards the fields below
	mem     *memStore
	f       *os.File
	end     int64  // offset just past the last record replayed
	nextSeq uint64 // seq of the next commit record
	closed  bool
	// torn is the incomplete last record the latest (re)load found: a
	// record being written, or what a crash left (see World.TornTail).
	torn *tornTailError
}

// openLogReadOnly opens the log store at path for reading, without the lock.
func openLogReadOnly(path string) (*roLogStore, error) {
	s := &roLogStore{path: path}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// reload reads the file the path names from its start into new trees. An
// incomplete last record is one being written when a process holds the
// store, and what a crash left when none does: then reload fails with it
// (ErrTornTail), as Open with the lock would.
func (s *roLogStore) reload() error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", s.path, err)
	}
	mem, r, err := s.replay(f)
	if err == nil && r.torn != nil && exclusiveLocks && !heldByWriter(f) {
		err = r.torn
	}
	if err != nil {
		_ = f.Close()
		return err
	}
	marker, _ := mem.buckets[bMeta].Get(keyItem(formatKey))
	if err := checkLayout(s.path, marker.val()); err != nil {
		_ = f.Close()
		return err
	}
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, s.mem, s.end, s.nextSeq, s.torn = f, mem, r.end, r.nextSeq, r.torn
	return nil
}

// replay reads f from its start into new trees. A file that ends inside a
// record may be one a writer is growing (it allocates space, then writes
// the record into it), and a header that does not check may be one its
// holder is rewriting as it closes the store (markClosed): while the file
// grows or a process holds it, a failed read is tried again, a few times.
func (s *roLogStore) replay(f *os.File) (*memStore, replayed, error) {
	for look := 1; ; look++ {
		buf, err := readFrom(f, 0)
		if err != nil {
			return nil, replayed{}, fmt.Errorf("localworld: open %s: %w", s.path, err)
		}
		if len(buf) == 0 {
			// An empty file (touch) is a new store no one has written yet;
			// the Open that makes it renames a new file over it.
			buf = newLogBytes()
		}
		mem := newMemStore()
		r, err := replayLog(s.path, buf, mem)
		if err != nil && look < 3 {
			if fi, serr := f.Stat(); (serr == nil && fi.Size() > int64(len(buf))) || heldByWriter(f) {
				continue
			}
		}
		return mem, r, err
	}
}

// heldByWriter reports whether a process holds the store open with its
// lock, to write it.
func heldByWriter(f *os.File) bool {
	probe, err := os.Open(f.Name())
	if err != nil {
		return false
	}
	defer probe.Close()
	return lockShared(probe, 0) != nil
}

// readFrom reads f from off to its current end.
func readFrom(f *os.File, off int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= off {
		return nil, nil
	}
	buf := make([]byte, fi.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// refresh brings the trees up to date with the file and returns them.
func (s *roLogStore) refresh() (*memStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errStoreClosed
	}
	cur, err := s.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("localworld: read %s: %w", s.path, err)
	}
	if now, err := os.Stat(s.path); err == nil && !os.SameFile(cur, now) {
		if err := s.reload(); err != nil {
			return nil, err
		}
		return s.mem, nil
	}
	tail, err := readFrom(s.f, s.end)
	if err != nil {
		return nil, fmt.Errorf("localworld: read %s: %w", s.path, err)
	}
	s.applyTail(tail)
	// A writer of another layout (a later version's upgrade) is refused
	// here as at Open, not read as damage.
	marker, _ := s.mem.buckets[bMeta].Get(keyItem(formatKey))
	if err := checkLayout(s.path, marker.val()); err != nil {
		return nil, err
	}
	return s.mem, nil
}

// applyTail replays the whole commit records at the start of tail (the
// bytes after s.end) into the trees, under their write lock.
func (s *roLogStore) applyTail(tail []byte) {
	mem := s.mem
	put := func(b bucketID, k, v []byte, _ int) { mem.buckets[b].ReplaceOrInsert(ownedItem(k, v)) }
	del := func(b bucketID, k []byte) { mem.buckets[b].Delete(keyItem(k)) }
	var off int64
	mem.mu.Lock()
	defer mem.mu.Unlock()
	for off < int64(len(tail)) {
		rec, bad := readRecord(tail, off)
		if bad != "" || rec.seq != s.nextSeq || rec.kind != recKindCommit {
			break // not written yet (or space allocated ahead)
		}
		if err := applyOps(rec.ops, put, del); err != nil {
			break // a record that checks but does not parse: Open reports it
		}
		off = rec.end
		s.nextSeq++
	}
	s.end += off
}

func (s *roLogStore) view(fn func(kvTx) error) error {
	mem, err := s.refresh()
	if err != nil {
		return err
	}
	return mem.view(fn)
}

func (s *roLogStore) update(func(kvTx) error) error { return ErrReadOnly }

func (s *roLogStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	_ = s.mem.close()
	return s.f.Close()
}

// openReadOnly opens the World w over the existing log store at c.Path
// without its lock (Config.ReadOnly).
func openReadOnly(w *store, c *Config) (*store, error) {
	fi, err := os.Stat(c.Path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("localworld: open %s: %w", c.Path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("localworld: open %s: not a regular file", c.Path)
	}
	if fi.Size() > 0 {
		if err := checkFormat(c.Path); err != nil {
			return nil, err
		}
	}
	kv, err := openLogReadOnly(c.Path)
	if err != nil {
		return nil, err
	}
	w.kv = kv
	return w, nil
}

// TornTail reports, for a World opened with Config.ReadOnly, the incomplete
// last record it found when it read the file from its start (at Open, or
// after a compaction replaced the file) while a process held the store: an
// error matching ErrTornTail, or nil. Such a record is one being written at
// that moment (the holder's own Open refused or repaired an incomplete
// one); a reader makes sure by looking again a moment later. With no
// process holding the store, a read-only Open fails with the record
// instead (where flock exists), as Open with the lock does. A World that
// holds the lock returns nil.
func (w *World) TornTail() error { return w.s.tornTail() }

// tornTail is World.TornTail.
func (w *store) tornTail() error {
	s, ok := w.kv.(*roLogStore)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.torn == nil {
		return nil
	}
	return s.torn
}
