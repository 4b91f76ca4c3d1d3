package localworld

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
	bolt "go.etcd.io/bbolt"
)

// boltFlipsEnv sets how many random bit flips TestMigrateBoltDamaged makes
// (default 100).
const boltFlipsEnv = "SKEIN_BOLT_FLIPS"

// oldBoltStore makes, at a new path, a bbolt store as an earlier version
// wrote them (every bucket of bucketNames, the same keys and values),
// holding what a log World got from a few runs, and returns its path and
// its data (dumpKV).
func oldBoltStore(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	w := mustOpen(t, Config{Path: filepath.Join(dir, "source.skein"), Sync: SyncNone})
	for range 20 {
		runID := newRun(t, w, "wf")
		for range 10 {
			mustAppend(t, w, runID, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("x", 200)}))
		}
	}
	path := filepath.Join(dir, "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		for _, name := range bucketNames {
			if _, err := btx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return w.s.kv.view(func(tx kvTx) error {
			for b := range numBuckets {
				bk := btx.Bucket([]byte(bucketNames[b]))
				var perr error
				_ = tx.scan(b, nil, nil, false, func(k, v []byte) bool {
					perr = bk.Put(k, asLayout1(t, b, k, v))
					return perr == nil
				})
				if perr != nil {
					return perr
				}
			}
			return nil
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// What the migrated store holds once opened: the same, marked layout 2.
	want := map[string]string{}
	_ = w.s.kv.view(func(tx kvTx) error {
		for b := range numBuckets {
			_ = tx.scan(b, nil, nil, false, func(k, v []byte) bool {
				want[fmt.Sprintf("%s/%x", b, k)] = string(asLayout1(t, b, k, v))
				return true
			})
		}
		return nil
	})
	want[fmt.Sprintf("%s/%x", bMeta, formatKey)] = string(formatValue)
	return path, want
}

// asLayout1 is value v of key k in bucket b as layout 1 stored it: JSON
// records, and the layout marker 1.
func asLayout1(t *testing.T, b bucketID, k, v []byte) []byte {
	t.Helper()
	if b == bMeta && bytes.Equal(k, formatKey) {
		return formatV1
	}
	if len(v) == 0 || v[0] != codecV1 {
		return v
	}
	var rec any
	switch b {
	case bEvents:
		var ev world.Event
		if err := decode(b, k, v, &ev); err != nil {
			t.Fatal(err)
		}
		rec = storedEventOf(&ev)
	case bSteps:
		rec = new(world.Step)
	case bRuns:
		rec = new(world.Run)
	}
	if b != bEvents {
		if err := decode(b, k, v, rec); err != nil {
			t.Fatal(err)
		}
	}
	out, err := encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Open refuses a bbolt store, read-write or read-only, naming the command
// that migrates it, and leaves it untouched.
func TestOpenBoltStoreRefused(t *testing.T) {
	t.Parallel()
	path, _ := oldBoltStore(t)
	for _, cfg := range []Config{{}, {ReadOnly: true}, {Sync: SyncNone}} {
		err := wantOpenRefused(t, path, ErrBoltFormat, cfg)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "skein store migrate -from "+path) {
			t.Fatalf("Open(%+v): %v, want ErrCorrupt too, naming skein store migrate", cfg, err)
		}
	}
}

func TestMigrateBolt(t *testing.T) {
	t.Parallel()
	path, want := oldBoltStore(t)
	before, _ := os.ReadFile(path)
	to := filepath.Join(t.TempDir(), "new.skein")
	rep, err := MigrateBolt(path, to)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 20 || rep.Entries != len(want) || rep.SkippedCount != 0 || len(rep.DamagedRuns) != 0 {
		t.Fatalf("report %+v, want 20 runs, %d entries, nothing skipped", rep, len(want))
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("MigrateBolt changed the bbolt file")
	}
	w := mustOpen(t, Config{Path: to})
	if got := dumpKV(t, w.s.kv); !maps.Equal(got, want) {
		t.Fatalf("the migrated store holds %d entries, want the %d of the original, equal", len(got), len(want))
	}
	if left, _ := filepath.Glob(to + ".migrating-*"); len(left) > 0 {
		t.Fatalf("MigrateBolt left %v", left)
	}

	if _, err := MigrateBolt(path, to); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("MigrateBolt over an existing file: %v", err)
	}
	if _, err := MigrateBolt(to, filepath.Join(t.TempDir(), "x.skein")); err == nil || !strings.Contains(err.Error(), "already a log-format store") {
		t.Fatalf("MigrateBolt of a log store: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err })
	_ = db.Close()
	if _, err := MigrateBolt(other, filepath.Join(t.TempDir(), "y.skein")); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not a localworld store") {
		t.Fatalf("MigrateBolt of a bbolt file of another program: %v", err)
	}
}

// MigrateBolt on damaged bbolt files (random single-bit flips, and
// truncations) never panics or faults, and what it writes is always a
// store that opens. bbolt keeps no checksum of its data, so some flips
// change a value into another well-formed one: those are counted, not
// failed (that is why the format was retired), and logged with the rest.
func TestMigrateBoltDamaged(t *testing.T) {
	t.Parallel()
	flips := 100
	if v, err := strconv.Atoi(os.Getenv(boltFlipsEnv)); err == nil && v > 0 {
		flips = v
	}
	path, want := oldBoltStore(t)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, hw := highWater(t, path)
	rng := rand.New(rand.NewPCG(18, 7))
	dir := t.TempDir()
	var refused, same, skipped, silent int
	try := func(i int, b []byte) {
		from := filepath.Join(dir, fmt.Sprintf("bad-%d.db", i))
		to := filepath.Join(dir, fmt.Sprintf("new-%d.skein", i))
		if err := os.WriteFile(from, b, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(from)
		defer os.Remove(to)
		rep, err := MigrateBolt(from, to)
		if err != nil {
			refused++
			if _, serr := os.Stat(to); serr == nil {
				t.Fatalf("case %d: a failed MigrateBolt left %s", i, to)
			}
			return
		}
		w, err := Open(Config{Path: to})
		if err != nil {
			t.Fatalf("case %d: the migrated store does not open: %v", i, err)
		}
		got := dumpKV(t, w.s.kv)
		_ = w.Close()
		switch {
		case maps.Equal(got, want):
			same++
		case rep.SkippedCount > 0:
			skipped++
		default:
			silent++
		}
	}
	for i := range flips {
		b := append([]byte(nil), orig...)
		bit := rng.Int64N(hw * 8)
		b[bit/8] ^= 1 << (bit % 8)
		try(i, b)
	}
	for i, size := range []int64{0, 100, ps + 100, 2 * ps, hw - ps, hw / 2, hw - 1} {
		try(flips+i, orig[:size])
	}
	t.Logf("%d flips and 7 truncations of a %d-byte bbolt store: %d refused, %d migrated intact, %d migrated with skipped entries reported, %d migrated with changed data and no report",
		flips, hw, refused, same, skipped, silent)
}

// highWater returns the page size and the byte size the newest commit of
// the bbolt file at path spans.
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
