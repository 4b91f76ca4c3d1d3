package localworld

import (
	"bytes"
	"context"
	"errors"
	"os"
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
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a read-only open changed the file")
	}

	w := mustOpen(t, Config{Path: path})
	if m := storedMarker(t, w); m != string(formatValue) {
		t.Fatalf("opened to write: layout %q, want %q", m, formatValue)
	}
	checkStoreFixture(t, w)
	old := allRuns(t, w)[0]
	if c := firstByte(t, w, bRuns, runKey(old.RunID)); c != '{' {
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
