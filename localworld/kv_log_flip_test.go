package localworld

import (
	"context"
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
)

// flipsEnv sets how many random single-bit flips TestLogFlipSweep makes
// (default 1000); truncationsEnv how many random truncations (default 200).
const (
	flipsEnv       = "SKEIN_FLIPS"
	truncationsEnv = "SKEIN_TRUNCATIONS"
)

func envCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// flipStore makes a closed log store holding runs with steps, a hook, a
// stream and queued messages, and returns its path.
func flipStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "world.skein")
	w := mustOpen(t, Config{Path: path, Sync: SyncNone})
	for i := range 8 {
		id := newRun(t, w, fmt.Sprint("wf-", i%3))
		for j := range 4 {
			mustAppend(t, w, id, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: fmt.Sprint("step-", j), Input: []byte(`{"n":` + strconv.Itoa(j) + `}`)}))
		}
		if i%2 == 0 {
			mustAppend(t, w, id, ev(testIDs.New(world.PrefixHook), &world.HookCreated{Token: fmt.Sprint("tok-", i)}))
		}
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: id, Name: "out", Chunks: [][]byte{[]byte("chunk")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Enqueue(ctx, &world.EnqueueParams{Body: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLogFlipSweep damages a closed log store at random, one case at a
// time: a single-bit flip anywhere in the file, or a truncation at any
// length. Each damaged file is opened (with the lock, and read-only) and,
// when that succeeds, read fully. A case passes when the store reads
// exactly as the original, or the open fails with ErrCorrupt naming the
// file and not advising to repair (the store was closed: no torn write);
// a panic, an untyped error or different data fails the test. The seed is
// fixed; SKEIN_FLIPS and SKEIN_TRUNCATIONS make more cases.
func TestLogFlipSweep(t *testing.T) {
	t.Parallel()
	flips, truncations := envCount(flipsEnv, 1000), envCount(truncationsEnv, 200)
	orig, err := os.ReadFile(flipStore(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := readAll(t, filepath.Join(dir, "pristine.skein"), orig, Config{})
	if want.err != nil {
		t.Fatalf("the undamaged store: %v", want.err)
	}
	rng := rand.New(rand.NewPCG(18, 10))
	var same, refused int
	check := func(name string, b []byte) {
		for _, ro := range []bool{false, true} {
			path := filepath.Join(dir, "damaged.skein")
			got := readAll(t, path, b, Config{ReadOnly: ro})
			switch {
			case got.panicked != nil:
				t.Fatalf("%s (read-only %v): panic: %v", name, ro, got.panicked)
			case got.err == nil && maps.Equal(got.data, want.data):
				same++
			case got.err == nil:
				t.Fatalf("%s (read-only %v): opened and read without an error, but the data differs from the original", name, ro)
			case !errors.Is(got.err, ErrCorrupt) || !strings.Contains(got.err.Error(), path):
				t.Fatalf("%s (read-only %v): %v, want ErrCorrupt naming the file", name, ro, got.err)
			case errors.Is(got.err, ErrTornTail) || strings.Contains(got.err.Error(), "RepairTornTail"):
				t.Fatalf("%s (read-only %v): %v: a closed store's damage taken for a torn write", name, ro, got.err)
			default:
				refused++
			}
		}
	}
	for i := range flips {
		b := append([]byte(nil), orig...)
		bit := rng.IntN(len(b) * 8)
		b[bit/8] ^= 1 << (bit % 8)
		check(fmt.Sprintf("flip %d (bit %d of byte %d)", i, bit%8, bit/8), b)
	}
	for i := range truncations {
		size := rng.IntN(len(orig))
		check(fmt.Sprintf("truncation %d (to %d bytes)", i, size), orig[:size])
	}
	t.Logf("%d single-bit flips and %d truncations of a %d-byte store, each opened with the lock and read-only: "+
		"%d opens read the original data, %d were refused with ErrCorrupt, 0 changed data, 0 panics",
		flips, truncations, len(orig), same, refused)
}

// readResult is what opening and reading a store gave.
type readResult struct {
	data     map[string]string
	err      error
	panicked any
}

// readAll writes b to path, opens it with cfg and reads every key of every
// bucket, then every run and its events through the World, and closes it.
// The file is removed afterwards.
func readAll(t *testing.T, path string, b []byte, cfg Config) (res readResult) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer func() {
		if r := recover(); r != nil {
			res.panicked = r
		}
	}()
	cfg.Path = path
	w, err := Open(cfg)
	if err != nil {
		return readResult{err: err}
	}
	defer w.Close()
	data := map[string]string{}
	err = w.s.kv.view(func(tx kvTx) error {
		for b := range numBuckets {
			if err := tx.scan(b, nil, nil, false, func(k, v []byte) bool {
				data[fmt.Sprintf("%s/%x", b, k)] = string(v)
				return true
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return readResult{err: err}
	}
	ctx := context.Background()
	page, err := w.ListRuns(ctx, &world.ListRunsParams{Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		return readResult{err: err}
	}
	for _, r := range page.Items {
		evs, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: r.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
		if err != nil {
			return readResult{err: err}
		}
		data["events-read/"+r.RunID] = strconv.Itoa(len(evs.Items))
	}
	return readResult{data: data}
}
