package localworld

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// forStores runs fn on each kvStore implementation, fresh per subtest.
func forStores(t *testing.T, fn func(t *testing.T, s kvStore)) {
	t.Helper()
	open := map[string]func(t *testing.T) kvStore{
		"mem": func(*testing.T) kvStore { return newMemStore() },
		"log": func(t *testing.T) kvStore { return openTestLog(t, Config{Sync: SyncNone}) },
		"log-batch": func(t *testing.T) kvStore {
			return openTestLog(t, Config{Sync: SyncBatch})
		},
	}
	for name, o := range open {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := o(t)
			t.Cleanup(func() { _ = s.close() })
			fn(t, s)
		})
	}
}

func scanKeys(t *testing.T, s kvStore, b bucketID, lo, hi []byte, desc bool) []string {
	t.Helper()
	var out []string
	err := s.view(func(tx kvTx) error {
		return tx.scan(b, lo, hi, desc, func(k, _ []byte) bool {
			out = append(out, string(k))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKVGetPutDelete(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, s kvStore) {
		err := s.update(func(tx kvTx) error {
			if err := tx.put(bRuns, []byte("a"), []byte("1")); err != nil {
				return err
			}
			if got, _ := tx.get(bRuns, []byte("a")); string(got) != "1" {
				return fmt.Errorf("own write: got %q", got)
			}
			if got, _ := tx.get(bSteps, []byte("a")); got != nil {
				return fmt.Errorf("buckets are separate: got %q", got)
			}
			if err := tx.put(bRuns, []byte("a"), []byte("2")); err != nil {
				return err
			}
			return tx.put(bRuns, []byte("b"), []byte("3"))
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.update(func(tx kvTx) error { return tx.del(bRuns, []byte("b")) })
		if err != nil {
			t.Fatal(err)
		}
		err = s.view(func(tx kvTx) error {
			if got, _ := tx.get(bRuns, []byte("a")); string(got) != "2" {
				return fmt.Errorf("a = %q, want 2", got)
			}
			if got, _ := tx.get(bRuns, []byte("b")); got != nil {
				return fmt.Errorf("b = %q after delete", got)
			}
			return tx.del(bRuns, []byte("missing")) // deleting nothing in a view must not be allowed
		})
		if err == nil {
			t.Fatal("delete in a read transaction succeeded")
		}
	})
}

func TestKVRollback(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, s kvStore) {
		if err := s.update(func(tx kvTx) error { return tx.put(bRuns, []byte("keep"), []byte("v1")) }); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := s.update(func(tx kvTx) error {
			_ = tx.put(bRuns, []byte("keep"), []byte("v2"))
			_ = tx.put(bRuns, []byte("new"), []byte("x"))
			_ = tx.del(bRuns, []byte("keep"))
			_ = tx.put(bRuns, []byte("keep"), []byte("v3"))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("update: %v, want boom", err)
		}
		if got := scanKeys(t, s, bRuns, nil, nil, false); !slices.Equal(got, []string{"keep"}) {
			t.Fatalf("after rollback keys = %q", got)
		}
		_ = s.view(func(tx kvTx) error {
			if v, _ := tx.get(bRuns, []byte("keep")); string(v) != "v1" {
				t.Errorf("after rollback keep = %q, want v1", v)
			}
			return nil
		})
	})
}

func TestKVScan(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, s kvStore) {
		keys := []string{"a", "b", "ba", "bb", "c", "d"}
		err := s.update(func(tx kvTx) error {
			for _, k := range keys {
				if err := tx.put(bEvents, []byte(k), []byte("v"+k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			lo, hi string
			nilHi  bool
			desc   bool
			want   []string
		}{
			{lo: "", nilHi: true, want: keys},
			{lo: "", nilHi: true, desc: true, want: []string{"d", "c", "bb", "ba", "b", "a"}},
			{lo: "b", hi: "c", want: []string{"b", "ba", "bb"}},
			{lo: "b", hi: "c", desc: true, want: []string{"bb", "ba", "b"}},
			{lo: "b", hi: "bz", desc: true, want: []string{"bb", "ba", "b"}},
			{lo: "ba", nilHi: true, desc: true, want: []string{"d", "c", "bb", "ba"}},
			{lo: "bb\x00", hi: "zz", want: []string{"c", "d"}},
			{lo: "0", hi: "a", want: nil},
			{lo: "0", hi: "a", desc: true, want: nil},
			{lo: "e", nilHi: true, desc: true, want: nil},
		}
		for _, c := range cases {
			var hi []byte
			if !c.nilHi {
				hi = []byte(c.hi)
			}
			got := scanKeys(t, s, bEvents, []byte(c.lo), hi, c.desc)
			if !slices.Equal(got, c.want) {
				t.Errorf("scan [%q, %q) desc=%v = %q, want %q", c.lo, c.hi, c.desc, got, c.want)
			}
		}
		// Stopping early.
		var n int
		_ = s.view(func(tx kvTx) error {
			return tx.scan(bEvents, nil, nil, false, func(_, _ []byte) bool { n++; return n < 2 })
		})
		if n != 2 {
			t.Errorf("scan stopped after %d keys, want 2", n)
		}
	})
}

func TestKVKeyLimits(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, s kvStore) {
		err := s.update(func(tx kvTx) error { return tx.put(bRuns, bytes.Repeat([]byte("k"), maxKeySize+1), []byte("v")) })
		if !errors.Is(err, errKeyTooLarge) {
			t.Fatalf("oversized key: %v, want errKeyTooLarge", err)
		}
		err = s.update(func(tx kvTx) error { return tx.put(bRuns, nil, []byte("v")) })
		if err == nil {
			t.Fatal("empty key accepted")
		}
	})
}

func TestKVClosed(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, s kvStore) {
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
		err := s.view(func(kvTx) error { return nil })
		if !errors.Is(err, errStoreClosed) {
			t.Fatalf("view after close: %v", err)
		}
	})
}

func TestKeyEncoding(t *testing.T) {
	t.Parallel()
	// Times order by bytes, including before 1970.
	times := []time.Time{
		time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, -1),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		a, b := newKey().time(times[i-1]), newKey().time(times[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("time %v does not sort before %v", times[i-1], times[i])
		}
		if got := bitsTime(timeBits(times[i])); !got.Equal(times[i]) {
			t.Errorf("time round trip: %v -> %v", times[i], got)
		}
	}
	// A length-prefixed string never prefixes a longer one.
	short, long := newKey().str("run"), newKey().str("run2")
	if bytes.HasPrefix(long, short) {
		t.Error("str(run) is a prefix of str(run2)")
	}
	s, rest, ok := readStr(newKey().str("abc").raw("tail"))
	if !ok || s != "abc" || string(rest) != "tail" {
		t.Errorf("readStr = %q %q %v", s, rest, ok)
	}
	if _, _, ok := readStr([]byte{5, 'a'}); ok {
		t.Error("readStr accepted a short string")
	}
	if got := prefixEnd([]byte{1, 0xff}); !bytes.Equal(got, []byte{2}) {
		t.Errorf("prefixEnd = %v", got)
	}
	if got := prefixEnd([]byte{0xff, 0xff}); got != nil {
		t.Errorf("prefixEnd(ff ff) = %v, want nil", got)
	}
}

func TestMemStoreRollbackOnPanic(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	func() {
		defer func() { _ = recover() }()
		_ = s.update(func(tx kvTx) error {
			_ = tx.put(bRuns, []byte("x"), []byte("y"))
			panic("boom")
		})
	}()
	if got := scanKeys(t, s, bRuns, nil, nil, false); len(got) != 0 {
		t.Fatalf("panicking transaction left %q", got)
	}
}

// Group commit: concurrent calls share transactions, a failing call gets
// its own error and rolls back nothing of the others, and a panic surfaces
// in the goroutine of the call that panicked.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	t.Run("log", func(t *testing.T) {
		t.Parallel()
		s := openTestLog(t, Config{Sync: SyncBatch})
		testGroupCommit(t, s)
		// Survives a reopen: the batches' records replay.
		want := dumpKV(t, s)
		path := s.path
		_ = s.close()
		if got := dumpKV(t, openTestLog(t, Config{Path: path})); !maps.Equal(got, want) {
			t.Fatalf("reopened: %d keys, want %d", len(got), len(want))
		}
	})
}

func testGroupCommit(t *testing.T, s kvStore) {
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	panics := make([]any, n)
	for i := range n {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = s.update(func(tx kvTx) error {
				if err := tx.put(bRuns, []byte(fmt.Sprintf("k%02d", i)), []byte("v")); err != nil {
					return err
				}
				switch {
				case i%7 == 3:
					return fmt.Errorf("refused %d", i)
				case i == 10:
					panic("boom")
				}
				return nil
			})
		})
	}
	wg.Wait()
	var want []string
	for i := range n {
		switch {
		case i%7 == 3:
			if errs[i] == nil || errs[i].Error() != fmt.Sprintf("refused %d", i) {
				t.Errorf("call %d: %v", i, errs[i])
			}
		case i == 10:
			if panics[i] != "boom" {
				t.Errorf("call 10 did not panic in its goroutine: %v, %v", panics[i], errs[i])
			}
		default:
			if errs[i] != nil || panics[i] != nil {
				t.Errorf("call %d: %v, %v", i, errs[i], panics[i])
			}
			want = append(want, fmt.Sprintf("k%02d", i))
		}
	}
	if got := scanKeys(t, s, bRuns, nil, nil, false); !slices.Equal(got, want) {
		t.Fatalf("committed keys %q, want %q", got, want)
	}
}
