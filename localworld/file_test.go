package localworld

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
	bolt "go.etcd.io/bbolt"
)

// filledStore makes a closed bbolt store with some data in it and returns
// its path.
func filledStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "world.db")
	w, err := Open(Config{Path: path, Format: FormatBolt})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		runID := newRun(t, w, "wf")
		for range 10 {
			mustAppend(t, w, runID, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("x", 200)}))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// highWater returns the page size and the byte size the newest commit spans.
func highWater(t *testing.T, path string) (pageSize, size int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := parseMeta(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(m0.pageSize)
	m1, err := parseMeta(b[ps:], 1)
	if err != nil {
		t.Fatal(err)
	}
	if m1.txid > m0.txid {
		m0 = m1
	}
	return ps, int64(m0.pgid) * ps
}

// wantOpenRefused opens path, expects target naming the file, and checks
// that the file's bytes did not change.
func wantOpenRefused(t *testing.T, path string, target error, cfg Config) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = path
	if cfg.LockTimeout == 0 {
		cfg.LockTimeout = 100 * time.Millisecond
	}
	w, openErr := Open(cfg)
	if openErr == nil {
		_ = w.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(openErr, target) {
		t.Fatalf("Open: %v, want %v", openErr, target)
	}
	if !strings.Contains(openErr.Error(), path) {
		t.Errorf("error does not name the file: %v", openErr)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the failed Open modified the file (%d bytes before, %d after)", len(before), len(after))
	}
	t.Logf("refused as expected: %v", openErr)
}

func TestOpenTruncatedFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		size func(pageSize, highWater int64) int64
	}{
		{"inside-meta-0", func(int64, int64) int64 { return 100 }},
		{"inside-meta-1", func(ps, _ int64) int64 { return ps + 100 }},
		{"one-page-short", func(ps, hw int64) int64 { return hw - ps }},
		{"to-half", func(_, hw int64) int64 { return hw / 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filledStore(t)
			ps, hw := highWater(t, path)
			if err := os.Truncate(path, c.size(ps, hw)); err != nil {
				t.Fatal(err)
			}
			wantOpenRefused(t, path, ErrCorrupt, Config{})
		})
	}
}

func TestOpenCorruptMetaPage(t *testing.T) {
	t.Parallel()
	for _, page := range []int64{0, 1} {
		t.Run(string(rune('0'+page)), func(t *testing.T) {
			t.Parallel()
			path := filledStore(t)
			ps, _ := highWater(t, path)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Overwrite the middle of the meta (root bucket and freelist
			// page numbers): one bad page is enough to refuse the file,
			// although bbolt alone would fall back to the other meta.
			if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef}, page*ps+boltPageHeader+24); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			wantOpenRefused(t, path, ErrCorrupt, Config{})
		})
	}
}

func TestOpenDamagedDataPageWithCheck(t *testing.T) {
	t.Parallel()
	path := filledStore(t)
	ps, hw := highWater(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Give every leaf page beyond the metas an invalid type.
	n := 0
	for off := 2 * ps; off < hw; off += ps {
		if b[off+8] == 0x02 {
			b[off+8] = 0x40
			n++
		}
	}
	if n == 0 {
		t.Fatal("no leaf page found")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	wantOpenRefused(t, path, ErrCorrupt, Config{CheckOnOpen: true})
}

func TestOpenForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	wantOpenRefused(t, garbage, ErrCorrupt, Config{})

	// A valid bbolt file that is not a localworld store.
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err })
	_ = db.Close()
	wantOpenRefused(t, other, ErrCorrupt, Config{})

	if _, err := Open(Config{Path: dir}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open(directory): %v", err)
	}
	if _, err := Open(Config{Path: filepath.Join(dir, "missing", "world.db")}); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

func TestOpenLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "world.db")
	w := mustOpen(t, Config{Path: path})
	start := time.Now()
	_, err := Open(Config{Path: path, LockTimeout: 150 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: %v, want ErrLocked naming the file", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("gave up after %s", took)
	}
	// The holder is unaffected, and the lock goes with Close.
	newRun(t, w, "wf")
	_ = w.Close()
	w2 := mustOpen(t, Config{Path: path, LockTimeout: time.Second})
	if p, err := w2.ListRuns(context.Background(), nil); err != nil || len(p.Items) != 1 {
		t.Fatalf("ListRuns after reopen: %+v, %v", p, err)
	}
}

func TestCreateLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "world.db")
	_ = mustOpen(t, Config{Path: path, FileMode: 0o640})
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "world.db" {
		t.Fatalf("directory holds %v", entries)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := (*Config)(nil).WithDefaults()
	if c.Format != FormatLog || c.compactMin != defaultCompactMin || c.Sync != SyncEveryCommit || c.DedupeWindow != DefaultDedupeWindow || c.Now == nil || c.Logger == nil || c.LockTimeout != DefaultLockTimeout {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []Config{{Sync: 7}, {Format: 9}, {CheckOnOpen: true}, {FileMode: os.ModeDir | 0o700}} {
		if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "invalid config") {
			t.Errorf("Open(%+v): %v", bad, err)
		}
	}
	if SyncBatch.String() != "batch" || SyncPolicy(9).String() != "SyncPolicy(9)" {
		t.Error("SyncPolicy.String")
	}
	if FormatLog.String() != "log" || FormatBolt.String() != "bolt" || FormatDefault.String() != "default" || Format(9).String() != "Format(9)" {
		t.Error("Format.String")
	}
}
