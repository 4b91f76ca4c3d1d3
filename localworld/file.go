package localworld

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	berrors "go.etcd.io/bbolt/errors"
)

var (
	// ErrCorrupt is returned by Open for a file that is truncated, damaged or
	// not a localworld store, and wrapped by reads that find a record they
	// cannot decode. Open never writes to such a file.
	ErrCorrupt = errors.New("localworld: store is corrupt")
	// ErrLocked is returned by Open when another process (or another World
	// in this one) holds the file beyond Config.LockTimeout.
	ErrLocked = errors.New("localworld: store is locked by another process")
)

// formatKey in bucket meta marks a localworld store and its layout
// version: formatValue, the layout this version writes (2: events, steps
// and runs in the binary encoding, codec.go), or formatV1, JSON records
// throughout (bbolt stores, and log stores of earlier versions), which it
// reads as they are and marks as layout 2 when it opens them to write.
var (
	formatKey   = []byte("format")
	formatValue = []byte("skein-localworld/2")
	formatV1    = []byte("skein-localworld/1")
)

// checkLayout checks a store's layout marker.
func checkLayout(path string, marker []byte) error {
	if bytes.Equal(marker, formatValue) || bytes.Equal(marker, formatV1) {
		return nil
	}
	return fmt.Errorf("%w: open %s: store layout %q, which this version does not read (it reads %q and %q): "+
		"a store written by a later version of Skein, or damaged; open it with that version, or restore a copy (the file was left untouched)",
		ErrCorrupt, path, marker, formatV1, formatValue)
}

func openError(path string, cfg *Config, err error) error {
	switch {
	case errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: open %s: gave up after %s", ErrLocked, path, cfg.LockTimeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return fmt.Errorf("%w: open %s: %v (the file was left untouched)", ErrCorrupt, path, err)
	}
	return fmt.Errorf("localworld: open %s: %w", path, err)
}

// guard runs fn, which reads the file through bbolt, turning a panic or a
// memory fault into ErrCorrupt: bbolt trusts its file, and asserts or faults
// on a damaged page. It is used only where no other code runs (MigrateBolt).
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: open %s: damaged page: %v (the file was left untouched)", ErrCorrupt, path, r)
		}
	}()
	return fn()
}

// linkIntoPlace gives the finished, synced file tmpName the name path, unless
// another process created path meanwhile (then that store is opened
// instead), and syncs the directory. The caller removes tmpName.
func linkIntoPlace(tmpName, path string) error {
	if err := os.Link(tmpName, path); err != nil && !errors.Is(err, fs.ErrExist) {
		if _, statErr := os.Stat(path); !errors.Is(statErr, fs.ErrNotExist) {
			return fmt.Errorf("localworld: create %s: %w", path, err)
		}
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("localworld: create %s: %w", path, err)
		}
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("localworld: sync directory %s: %w", dir, err)
	}
	return nil
}

// bbolt's on-disk format (go.etcd.io/bbolt internal/common): a page starts
// with a 16-byte header (id u64, flags u16, count u16, overflow u32); pages 0
// and 1 hold a meta in native byte order: magic u32, version u32, pageSize
// u32, flags u32, root bucket (root u64, sequence u64), freelist u64, pgid
// u64 (the high-water page), txid u64, checksum u64 (FNV-64a of the 56 bytes
// before it).
const (
	boltPageHeader   = 16
	boltMetaSize     = 64
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltMetaFlag     = 0x04
	boltNoFreelist   = ^uint64(0)
	boltMinPageSize  = 1024
	boltMaxPageSize  = 1 << 24
	boltFirstReadLen = 4096
)

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

// checkFile validates an existing bbolt store without writing to it: both meta
// pages must be intact and the file must hold every page the newest one
// references. It holds a shared lock while it reads, so no writer is active.
//
// bbolt itself would open a file with one bad meta page by falling back to
// the other, older one, silently losing the last commit and then overwriting
// the bad page. A meta fits in the first 512-byte sector of its page, which
// disks write atomically, so a torn write cannot produce a bad checksum: a
// bad meta is damage, and Open refuses it.
func checkFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	defer f.Close()
	if err := lockShared(f, cfg.LockTimeout); err != nil {
		if errors.Is(err, errLockTimeout) {
			return fmt.Errorf("%w: open %s: gave up after %s", ErrLocked, path, cfg.LockTimeout)
		}
		return fmt.Errorf("localworld: open %s: lock: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	size := fi.Size()
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: open %s: %s (the file was left untouched)", ErrCorrupt, path, fmt.Sprintf(format, args...))
	}
	if size < boltFirstReadLen {
		return corrupt("file is %d bytes, too short for a store (truncated?)", size)
	}
	page := make([]byte, boltFirstReadLen)
	if _, err := f.ReadAt(page, 0); err != nil {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	m0, err := parseMeta(page, 0)
	if err != nil {
		return corrupt("meta page 0: %v", err)
	}
	ps := int64(m0.pageSize)
	if size < 2*ps {
		return corrupt("file is %d bytes, shorter than its two %d-byte meta pages (truncated)", size, ps)
	}
	page = make([]byte, ps)
	if _, err := f.ReadAt(page, ps); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("localworld: open %s: %w", path, err)
	}
	m1, err := parseMeta(page, 1)
	if err != nil {
		return corrupt("meta page 1: %v", err)
	}
	if m1.pageSize != m0.pageSize {
		return corrupt("meta pages disagree on the page size (%d, %d)", m0.pageSize, m1.pageSize)
	}
	newest := m0
	if m1.txid > m0.txid {
		newest = m1
	}
	if need := int64(newest.pgid) * ps; size < need {
		return corrupt("file is %d bytes but its last commit (transaction %d) spans %d bytes (truncated)", size, newest.txid, need)
	}
	return nil
}

func parseMeta(page []byte, id uint64) (boltMeta, error) {
	ne := binary.NativeEndian
	m := page[boltPageHeader : boltPageHeader+boltMetaSize]
	if magic := ne.Uint32(m[0:]); magic != boltMagic {
		if id == 0 {
			return boltMeta{}, fmt.Errorf("bad magic %#x: neither a bbolt file (magic %#x) nor a log-format store (%q)", magic, uint32(boltMagic), logMagic)
		}
		return boltMeta{}, fmt.Errorf("bad magic %#x, a bbolt meta page has %#x", magic, uint32(boltMagic))
	}
	if got := ne.Uint64(page[0:]); got != id {
		return boltMeta{}, fmt.Errorf("page id is %d", got)
	}
	if flags := ne.Uint16(page[8:]); flags != boltMetaFlag {
		return boltMeta{}, fmt.Errorf("not a meta page (flags %#x)", flags)
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("unsupported bbolt format version %d", v)
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if sum := ne.Uint64(m[56:]); sum != h.Sum64() {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	meta := boltMeta{
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}
	if meta.pageSize < boltMinPageSize || meta.pageSize > boltMaxPageSize || meta.pageSize&(meta.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("implausible page size %d", meta.pageSize)
	}
	if meta.pgid < 2 || meta.root >= meta.pgid || (meta.freelist != boltNoFreelist && meta.freelist >= meta.pgid) {
		return boltMeta{}, fmt.Errorf("page references out of range (root %d, freelist %d, high water %d)", meta.root, meta.freelist, meta.pgid)
	}
	return meta, nil
}
