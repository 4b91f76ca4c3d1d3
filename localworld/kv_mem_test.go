package localworld

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestMemStoreKeepsUndoLog: a write transaction's undo log reuses the
// array the last one grew, so a commit of ten puts allocates its copies of
// them and its transaction, not an undo log growing from nothing (five
// more allocations); the kept array holds none of the values it replaced.
func TestMemStoreKeepsUndoLog(t *testing.T) {
	s := newMemStore()
	const n = 10
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%02d", i))
	}
	val := []byte(`{"v":1}`)
	commit := func(tx kvTx) error {
		for _, k := range keys {
			if err := tx.put(bRuns, k, val); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.update(commit); err != nil { // the keys exist from here on
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := s.update(commit); err != nil {
			t.Fatal(err)
		}
	})
	if want := float64(n + 1); allocs > want {
		t.Errorf("an update of %d puts: %v allocations, want at most %v (the copies and the transaction)", n, allocs, want)
	}
	for i, u := range s.undo[:cap(s.undo)] {
		if u.k != nil || u.old.p != nil {
			t.Fatalf("kept undo entry %d holds key %q, item %q", i, u.k, u.old.array())
		}
	}
}

// TestMemItemSize: a B-tree slot is 16 bytes (a node holds about twice as
// many slots as items, so each byte here is two per item kept).
func TestMemItemSize(t *testing.T) {
	if got := unsafe.Sizeof(memItem{}); got != 16 {
		t.Errorf("memItem is %d bytes, want 16", got)
	}
	it := makeItem([]byte("keyvalue"), 3, true)
	if string(it.key()) != "key" || !it.onDisk() || it.keyLen() != 3 || string(it.array()) != "keyvalue" {
		t.Errorf("item: key %q, on disk %v, array %q", it.key(), it.onDisk(), it.array())
	}
	if k := keyItem(nil); k.key() != nil || k.p != nil {
		t.Errorf("the item of an empty key: %+v", k)
	}
}
