package localworld

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// openStore opens the log store at cfg.Path, or creates one. A file in
// another format is refused: a bbolt store with ErrBoltFormat (naming the
// command that migrates it), anything else with ErrCorrupt.
func openStore(cfg *Config) (kvStore, error) {
	path := cfg.Path
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := createLogFile(cfg); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("localworld: open %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("localworld: open %s: not a regular file", path)
	case fi.Size() == 0:
		if err := initEmptyLog(cfg); err != nil {
			return nil, err
		}
	}
	if err := checkFormat(path); err != nil {
		return nil, err
	}
	s, err := openLog(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.upgradeLayout(); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// upgradeLayout makes a store of layout 1 a store of layout 2 before
// anything else is written to it: a compaction whose snapshot holds the
// layout 2 marker, renamed over the file. Its records stay JSON, which
// decode reads as they are; the records written from then on are binary,
// which an earlier version cannot read. The marker makes it refuse the
// store, naming the layout, at Open, and a reader of an earlier version
// that has it open meanwhile reads the new file from its start (the path
// names another file), which it refuses likewise, instead of reading
// binary records as damage. When the compaction fails the file is left as
// it was, and so is Open's error.
func (s *logStore) upgradeLayout() error {
	s.mem.mu.Lock()
	marker, _ := s.mem.buckets[bMeta].Get(keyItem(formatKey))
	if !bytes.Equal(marker.val(), formatV1) {
		s.mem.mu.Unlock()
		return nil
	}
	job := &compactJob{f: s.f, firstSeq: s.nextSeq, from: s.end}
	for i := range job.trees {
		job.trees[i] = s.mem.buckets[i].Clone()
	}
	job.trees[bMeta].ReplaceOrInsert(ownedItem(formatKey, formatValue))
	s.compacting = true
	s.compactWG.Add(1)
	s.mem.mu.Unlock()
	if err := s.compact(job); err != nil {
		return fmt.Errorf("localworld: open %s: the store is of layout %q and could not be rewritten as layout %q: %w", s.path, formatV1, formatValue, err)
	}
	s.logger.LogAttrs(context.Background(), slog.LevelInfo, "localworld: store layout upgraded",
		slog.String("path", s.path), slog.String("from", string(formatV1)), slog.String("to", string(formatValue)))
	return nil
}

// checkFormat reads the format of the file at path from its first bytes:
// nil for a log store, ErrBoltFormat for a bbolt store, and ErrCorrupt for
// a log store whose first bytes are damaged (its other markers, logSigns,
// are intact) or a file of neither kind.
func checkFormat(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	defer f.Close()
	b := make([]byte, logHeaderSize+recHeaderSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	b = b[:n]
	switch {
	case len(b) >= len(logMagic) && string(b[:len(logMagic)]) == logMagic:
		return nil
	case isBolt(b):
		return &boltFormatError{path: path}
	}
	if signs := logSigns(b); signs != "" {
		return fmt.Errorf("%w: open %s: a log-format store whose first bytes are damaged: it does not start with %q, but %s are intact (the file was left untouched)",
			ErrCorrupt, path, logMagic, signs)
	}
	return fmt.Errorf("%w: open %s: not a localworld store: it starts with neither %q (a log-format store) nor a bbolt page (the file was left untouched)",
		ErrCorrupt, path, logMagic)
}

// isBolt reports whether b, a file's first bytes, starts with a bbolt meta
// page.
func isBolt(b []byte) bool {
	return len(b) >= boltPageHeader+4 && binary.NativeEndian.Uint32(b[boltPageHeader:]) == boltMagic
}

// logSigns names the parts of a log store's start, other than its magic,
// that b holds intact: the header's version and length fields, the first
// record's magic right after the header.
func logSigns(b []byte) string {
	var signs []string
	le := binary.LittleEndian
	if len(b) >= 16 && le.Uint32(b[8:]) == logVersion && le.Uint32(b[12:]) == logHeaderSize {
		signs = append(signs, "the header's version and length")
	}
	if len(b) >= logHeaderSize+len(recMagic) && string(b[logHeaderSize:logHeaderSize+len(recMagic)]) == recMagic {
		signs = append(signs, "the first record's marker")
	}
	return strings.Join(signs, " and ")
}

// createLogFile makes a new log store at cfg.Path: a header and a snapshot
// holding the format marker, built under a temporary name, synced and
// linked into place, so the path never names a half-made file.
func createLogFile(cfg *Config) error {
	path := linkTarget(cfg.Path)
	tmpName, err := newLogFile(path, cfg.fileMode)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmpName) }()
	return linkIntoPlace(tmpName, path)
}

// initEmptyLog makes a new log store in place of the empty file at
// cfg.Path (one made by touch): an empty file holds no data, so it is taken
// for a new store, not refused as corrupt. The new store is built under a
// temporary name and renamed over the empty file while its lock is held
// (an Open waiting for that lock then finds that the path names another
// file, and opens that one); its permissions are the empty file's.
func initEmptyLog(cfg *Config) error {
	path, err := filepath.EvalSymlinks(cfg.Path)
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", cfg.Path, err)
	}
	f, err := openLocked(path, cfg.LockTimeout)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", cfg.Path, err)
	}
	if fi.Size() != 0 {
		return nil // another process made the store meanwhile
	}
	tmpName, err := newLogFile(path, fi.Mode().Perm())
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmpName) }()
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("localworld: create %s: %w", cfg.Path, err)
	}
	return syncDir(filepath.Dir(path))
}

// newLogFile writes a new, empty log store to a temporary file beside path,
// synced, with permissions mode, and returns its name.
func newLogFile(path string, mode os.FileMode) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".creating-*")
	if err != nil {
		return "", fmt.Errorf("localworld: create %s: %w", path, err)
	}
	tmpName := tmp.Name()
	_, err = tmp.Write(newLogBytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmpName, mode)
	}
	if err != nil {
		_ = os.Remove(tmpName)
		return "", fmt.Errorf("localworld: create %s: %w", path, err)
	}
	return tmpName, nil
}

// newLogBytes is the content of a new log store: a header and a snapshot
// holding the format marker.
func newLogBytes() []byte {
	snap := appendRecord(nil, 1, appendPutOp([]byte{recKindSnapshot}, bMeta, formatKey, formatValue))
	end := uint64(logHeaderSize + len(snap))
	h := logHeader{firstSeq: 1, snapRecords: 1, snapEnd: end, closedEnd: end}
	return append(h.encode(), snap...)
}

// linkTarget returns the file a dangling symbolic link at path names, so
// that a new store is made there and the link kept, or path.
func linkTarget(path string) string {
	dest, err := os.Readlink(path)
	if err != nil {
		return path
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(filepath.Dir(path), dest)
	}
	return dest
}

// openLocked opens path for writing under an exclusive lock. A compaction
// renames a new file over the path, so a lock won after waiting may be on a
// file the path no longer names: then it tries again.
func openLocked(path string, timeout time.Duration) (*os.File, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("localworld: open %s: %w", path, err)
		}
		if err := lockExclusive(f, time.Until(deadline)); err != nil {
			_ = f.Close()
			if errors.Is(err, errLockTimeout) {
				return nil, fmt.Errorf("%w: open %s: gave up after %s", ErrLocked, path, timeout)
			}
			return nil, fmt.Errorf("localworld: open %s: lock: %w", path, err)
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("localworld: open %s: %w", path, err)
		}
		if pi, err := os.Stat(path); err == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		_ = f.Close()
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: open %s: gave up after %s", ErrLocked, path, timeout)
		}
	}
}

// openLog opens a log store: it takes the lock, reads the whole file,
// checks and replays it (replayLog) and, when the last record is incomplete
// and cfg.RepairTornTail allows it, cuts that record off. Nothing is written
// to a file that fails a check.
func openLog(cfg *Config) (*logStore, error) {
	path := cfg.Path
	f, err := openLocked(path, cfg.LockTimeout)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("localworld: open %s: %w", path, err)
	}
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("localworld: open %s: %w", path, err)
	}
	mem := newMemStore()
	mem.disk, mem.diskName = f, path // values on disk are read from it (spill.go)
	r, err := replayLog(path, buf, mem)
	if err != nil {
		return nil, err
	}
	size := int64(len(buf))

	marker, _ := mem.buckets[bMeta].Get(keyItem(formatKey))
	if err := checkLayout(path, marker.val()); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if r.torn != nil {
		if !cfg.RepairTornTail {
			return nil, r.torn
		}
		err := f.Truncate(r.end)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			return nil, fmt.Errorf("localworld: open %s: drop the incomplete last record: %w", path, err)
		}
		logger.LogAttrs(context.Background(), slog.LevelWarn, "localworld: dropped the incomplete last record (Config.RepairTornTail)",
			slog.String("path", path), slog.Int64("offset", r.end), slog.Int64("bytes", size-r.end),
			slog.String("why", r.torn.reason), slog.Uint64("lastSeq", r.nextSeq-1))
		size = r.end
	}
	file, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("localworld: open %s: %w", path, err)
	}
	for _, p := range compactLeftovers(file) {
		if err := os.Remove(p); err == nil {
			logger.LogAttrs(context.Background(), slog.LevelInfo, "localworld: removed the file of an unfinished compaction", slog.String("path", p))
		}
	}
	s := &logStore{
		mem:         mem,
		path:        path,
		file:        file,
		dir:         filepath.Dir(file),
		sync:        cfg.Sync,
		group:       cfg.Sync != SyncNone,
		logger:      logger,
		allocMode:   cfg.alloc,
		compactMin:  cfg.compactMin,
		spillWindow: cfg.spillWindow,
		f:           f,
		end:         r.end,
		alloc:       size,
		nextSeq:     r.nextSeq,
		live:        r.live,
	}
	logger.LogAttrs(context.Background(), slog.LevelDebug, "localworld: replayed the log",
		slog.String("path", path), slog.Int64("bytes", r.end), slog.Int("records", r.records), slog.Int64("liveBytes", r.live))
	ok = true
	return s, nil
}
