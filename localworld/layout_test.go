package localworld

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// storedMarker returns the layout marker of w's store.
func storedMarker(t *testing.T, w *World) string {
	t.Helper()
	var m []byte
	err := w.s.kv.view(func(tx kvTx) error {
		v, err := tx.get(bMeta, formatKey)
		m = bytes.Clone(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(m)
}

// firstByte returns the first byte of the value of key k in bucket b.
func firstByte(t *testing.T, w *World, b bucketID, k []byte) byte {
	t.Helper()
	var c byte
	err := w.s.kv.view(func(tx kvTx) error {
		v, err := tx.get(b, k)
		if len(v) > 0 {
			c = v[0]
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLayoutUpgrade: a layout-1 store (JSON records) opens read-only as it
// is, file untouched; opened to write it is marked layout 2 and its JSON
// records read as before, beside the binary records written from then on,
// through a reopen.
func TestLayoutUpgrade(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, storeFixtureV1)
	before, _ := os.ReadFile(path)
	ro := mustOpen(t, Config{Path: path, ReadOnly: true})
	checkStoreFixture(t, ro)
	if m := storedMarker(t, ro); m != string(formatV1) {
		t.Fatalf("read-only: layout %q", m)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a read-only open changed the file")
	}
	old, err := os.Open(path) // what a reader of an earlier version has open
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldInfo, _ := old.Stat()

	w := mustOpen(t, Config{Path: path})
	if m := storedMarker(t, w); m != string(formatValue) {
		t.Fatalf("opened to write: layout %q, want %q", m, formatValue)
	}
	// The upgrade renamed a new file over the store: a reader of an
	// earlier version reads it from its start and refuses its layout; the
	// file it had open is as it was.
	if now, _ := os.Stat(path); os.SameFile(oldInfo, now) {
		t.Fatal("the upgrade wrote to the store's file in place")
	}
	if kept, _ := io.ReadAll(old); !bytes.Equal(kept, before) {
		t.Fatal("the upgrade changed the layout-1 file")
	}
	checkStoreFixture(t, ro) // this version's reader reads the new file
	if m := storedMarker(t, ro); m != string(formatValue) {
		t.Fatalf("the reader, after the upgrade: layout %q", m)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	checkStoreFixture(t, w)
	fixtureRun := allRuns(t, w)[0]
	if c := firstByte(t, w, bRuns, runKey(fixtureRun.RunID)); c != '{' {
		t.Fatalf("the fixture's run starts with %q, want JSON", c)
	}
	runID := newRun(t, w, "after")
	step := testIDs.New(world.PrefixStep)
	mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s", Input: []byte(`1`)}), ev(step, &world.StepStarted{}))
	for _, bk := range []struct {
		b bucketID
		k []byte
	}{{bRuns, runKey(runID)}, {bSteps, stepKey(runID, step)}, {bEvents, eventKey(runID, 1)}} {
		if c := firstByte(t, w, bk.b, bk.k); c != codecV1 {
			t.Errorf("a new %s record starts with %q, want the binary form", bk.b, c)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{Path: path, ReadOnly: true}, {Path: path}} {
		w := mustOpen(t, cfg)
		if runs := allRuns(t, w); len(runs) != 2 {
			t.Fatalf("%d runs after the upgrade, want 2", len(runs))
		}
		if evs := allEvents(t, w, runID); len(evs) != 4 || evs[3].Type() != world.EventStepStarted {
			t.Fatalf("the new run's events: %v", evs)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLayoutUnknownRefused: a store of a layout this version does not know
// (a later one) is refused as ErrCorrupt naming the layout, read-only or
// not, and the file is left as it was.
func TestLayoutUnknownRefused(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, storeFixture)
	w := mustOpen(t, Config{Path: path})
	if err := w.s.kv.update(func(tx kvTx) error { return tx.put(bMeta, formatKey, []byte("skein-localworld/3")) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	for _, cfg := range []Config{{Path: path, ReadOnly: true}, {Path: path}} {
		_, err := Open(cfg)
		if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(`"skein-localworld/3"`)) {
			t.Fatalf("Open(ReadOnly %v): %v, want ErrCorrupt naming the layout", cfg.ReadOnly, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a refused open changed the file")
	}
}

// allRuns lists w's runs (one page).
func allRuns(t *testing.T, w *World) []world.Run {
	t.Helper()
	pg, err := w.ListRuns(context.Background(), &world.ListRunsParams{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Items
}

// TestLayoutChangeSeenByAReader: a read-only World open on a store that a
// writer then gives a layout it does not know (a later version's) refuses
// it at its next read, naming the layout, instead of reading the writer's
// records as damage.
func TestLayoutChangeSeenByAReader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.skein")
	w := mustOpen(t, Config{Path: path})
	id := newRun(t, w, "wf")
	ro := mustOpen(t, Config{Path: path, ReadOnly: true})
	if _, err := ro.GetRun(context.Background(), &world.GetRunParams{RunID: id}); err != nil {
		t.Fatal(err)
	}
	err := w.s.kv.update(func(tx kvTx) error {
		if err := tx.put(bMeta, formatKey, []byte("skein-localworld/3")); err != nil {
			return err
		}
		return tx.put(bRuns, runKey(id), []byte{0x02, 1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ro.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"skein-localworld/3"`) {
		t.Fatalf("a read after the writer's layout change: %v, want a refusal naming the layout", err)
	}
}
