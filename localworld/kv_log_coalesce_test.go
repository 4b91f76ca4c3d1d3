package localworld

import (
	"fmt"
	"maps"
	"os"
	"testing"
)

// A key written several times in one transaction is logged once, with its
// last write, and the store reads the same after a reopen; in a
// transaction of many keys (past smallWrites) too.
func TestLogCoalescesWrites(t *testing.T) {
	for _, keys := range []int{3, 3 * smallWrites} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			s := openTestLog(t, Config{Sync: SyncNone})
			err := s.update(func(tx kvTx) error {
				return tx.put(bSteps, []byte("gone"), []byte("before"))
			})
			if err != nil {
				t.Fatal(err)
			}
			err = s.update(func(tx kvTx) error {
				for round := range 3 {
					for i := range keys {
						k := fmt.Appendf(nil, "k%03d", i)
						if err := tx.put(bRuns, k, fmt.Appendf(nil, "v%d-%d", i, round)); err != nil {
							return err
						}
					}
					if err := tx.put(bSteps, []byte("gone"), fmt.Appendf(nil, "r%d", round)); err != nil {
						return err
					}
				}
				return tx.del(bSteps, []byte("gone"))
			})
			if err != nil {
				t.Fatal(err)
			}
			want := dumpKV(t, s)
			if got := want[fmt.Sprintf("%s/%x", bRuns, "k000")]; got != "v0-2" {
				t.Fatalf("k000 = %q, want the last write v0-2", got)
			}
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if ops := lastRecordOps(t, s.path); ops != keys+1 {
				t.Errorf("the record holds %d operations, want %d (one per key)", ops, keys+1)
			}
			s2 := openTestLog(t, Config{Path: s.path, Sync: SyncNone})
			if got := dumpKV(t, s2); !maps.Equal(got, want) {
				t.Errorf("after reopening:\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// lastRecordOps counts the operations of the last commit record of the
// log file at path.
func lastRecordOps(t *testing.T, path string) int {
	t.Helper()
	_, recs := commitRecords(t, path)
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, bad := readRecord(buf, recs[len(recs)-1].off)
	if bad != "" {
		t.Fatal(bad)
	}
	n := 0
	count := func(bucketID, []byte) { n++ }
	if err := applyOps(rec.ops, func(b bucketID, k, _ []byte, _ int) { count(b, k) }, count); err != nil {
		t.Fatal(err)
	}
	return n
}
