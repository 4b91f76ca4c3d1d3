package localworld

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// openTestLog creates and opens a log kvStore in a fresh directory (or at
// cfg.Path) and closes it when the test ends.
func openTestLog(t *testing.T, cfg Config) *logStore {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "kv.db")
	}
	c := cfg.WithDefaults()
	if _, err := os.Stat(c.Path); err != nil {
		if err := createLogFile(c); err != nil {
			t.Fatal(err)
		}
	}
	s, err := openLog(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	return s
}

// dumpKV returns every key and value of s, by bucket.
func dumpKV(t *testing.T, s kvStore) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.view(func(tx kvTx) error {
		for b := range numBuckets {
			err := tx.scan(b, nil, nil, false, func(k, v []byte) bool {
				out[fmt.Sprintf("%s/%x", b, k)] = string(v)
				return true
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recSpan is where a commit record lies in a log file.
type recSpan struct{ off, end int64 }

// commitRecords lists the commit records of the log file at path.
func commitRecords(t *testing.T, path string) (logHeader, []recSpan) {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeLogHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []recSpan
	for off := int64(h.snapEnd); off < int64(len(buf)); {
		rec, bad := readRecord(buf, off)
		if bad != "" {
			break
		}
		out = append(out, recSpan{off, rec.end})
		off = rec.end
	}
	return h, out
}

func TestLogReopen(t *testing.T) {
	t.Parallel()
	for _, policy := range []SyncPolicy{SyncEveryCommit, SyncBatch, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "kv.db")
			s := openTestLog(t, Config{Path: path, Sync: policy})
			model := dumpKV(t, s)
			rng := rand.New(rand.NewPCG(1, uint64(policy)))
			for i := range 300 {
				err := s.update(func(tx kvTx) error {
					for range 1 + rng.IntN(5) {
						b := bucketID(1 + rng.IntN(int(numBuckets)-1))
						k := fmt.Appendf(nil, "k%03d", rng.IntN(50))
						mk := fmt.Sprintf("%s/%x", b, k)
						if rng.IntN(4) == 0 {
							if err := tx.del(b, k); err != nil {
								return err
							}
							delete(model, mk)
							continue
						}
						v := bytes.Repeat([]byte{byte(i)}, rng.IntN(100))
						if err := tx.put(b, k, v); err != nil {
							return err
						}
						model[mk] = string(v)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := dumpKV(t, s); !maps.Equal(got, model) {
				t.Fatal("store differs from the model before reopening")
			}
			end := s.end
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != end {
				t.Fatalf("closed file is %v bytes, log ends at %d: the space allocated ahead was not trimmed (%v)", fi.Size(), end, err)
			}
			s2 := openTestLog(t, Config{Path: path, Sync: policy})
			if got := dumpKV(t, s2); !maps.Equal(got, model) {
				t.Fatalf("reopened store differs from the model: %d keys, want %d", len(got), len(model))
			}
			if s2.nextSeq != s.nextSeq || s2.live != s.live {
				t.Fatalf("reopened: seq %d live %d, before close: seq %d live %d", s2.nextSeq, s2.live, s.nextSeq, s.live)
			}
		})
	}
}

// logWorld makes a closed log store holding runs, one commit per Append,
// and returns its path and the runs with their event counts, in commit
// order: the last Append made the last record.
func logWorld(t *testing.T) (string, []string, map[string]int) {
	t.Helper()
	path, _, runs, counts := logWorlds(t)
	return path, runs, counts
}

// logWorlds is logWorld, and also returns the path of a copy of the file
// taken before Close: what a crash (kill -9) would have left, with the
// space allocated ahead of the writes and no closed end.
func logWorlds(t *testing.T) (closed, crashed string, runs []string, counts map[string]int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "world.db")
	w, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	counts = map[string]int{}
	for range 5 {
		id := newRun(t, w, "wf")
		runs = append(runs, id)
		counts[id] = 2
		for range 3 {
			mustAppend(t, w, id, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: strings.Repeat("s", 100)}))
			counts[id]++
		}
	}
	crashed = copyFile(t, path)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, crashed, runs, counts
}

func copyFile(t *testing.T, from string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "world.db")
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

// checkRuns checks that every run has the events counts says.
func checkRuns(t *testing.T, w *World, counts map[string]int) {
	t.Helper()
	for id, n := range counts {
		if got := allEvents(t, w, id); len(got) != n {
			t.Fatalf("run %s has %d events, want %d", id, len(got), n)
		}
	}
}

// A write torn by a crash leaves the file's size (the record goes into
// space allocated ahead of it), with zeros where the write did not reach:
// Open refuses it as a torn tail and RepairTornTail drops it.
func TestLogTornTail(t *testing.T) {
	t.Parallel()
	_, orig, runs, counts := logWorlds(t)
	_, recs := commitRecords(t, orig)
	last := recs[len(recs)-1]
	lastRun := runs[len(runs)-1]
	// Every commit but the last: the last Append added one event.
	before := maps.Clone(counts)
	before[lastRun]--

	tears := map[string]int64{
		"1-byte":              last.off + 1,
		"inside-header":       last.off + recHeaderSize/2,
		"header-only":         last.off + recHeaderSize,
		"header-and-one-byte": last.off + recHeaderSize + 1,
		"half":                (last.off + last.end) / 2,
		"all-but-one-byte":    last.end - 1,
	}
	for name, at := range tears {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := copyFile(t, orig)
			b, _ := os.ReadFile(path)
			clear(b[at:last.end])
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			wantTorn(t, path, last.off)
			w := mustOpen(t, Config{Path: path, RepairTornTail: true})
			checkRuns(t, w, before)
			if fi, _ := os.Stat(path); fi.Size() != last.off {
				t.Fatalf("repaired file is %d bytes, want %d (the end of the last whole record)", fi.Size(), last.off)
			}
			// The repaired store takes writes and reopens cleanly.
			mustAppend(t, w, lastRun, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "again"}))
			_ = w.Close()
			w = mustOpen(t, Config{Path: path})
			after := maps.Clone(before)
			after[lastRun]++
			checkRuns(t, w, after)
		})
	}

	// A crash before the write began leaves nothing to repair.
	t.Run("before-the-write", func(t *testing.T) {
		t.Parallel()
		path := copyFile(t, orig)
		b, _ := os.ReadFile(path)
		clear(b[last.off:last.end])
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		w := mustOpen(t, Config{Path: path})
		checkRuns(t, w, before)
	})
}

func wantTorn(t *testing.T, path string, off int64) {
	t.Helper()
	before, _ := os.ReadFile(path)
	w, err := Open(Config{Path: path})
	if err == nil {
		_ = w.Close()
		t.Fatal("Open succeeded on a torn tail")
	}
	if !errors.Is(err, ErrTornTail) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrTornTail and ErrCorrupt", err)
	}
	for _, want := range []string{path, fmt.Sprintf("offset %d", off), "incomplete", "never acknowledged", "Config.RepairTornTail = true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the failed Open modified the file")
	}
	t.Logf("refused as expected: %v", err)
}

func TestLogCorruption(t *testing.T) {
	t.Parallel()
	orig, _, _ := logWorld(t)
	h, recs := commitRecords(t, orig)
	early := recs[2]
	cases := []struct {
		name string
		off  int64 // the offset the error must name; -1 for none
		harm func(b []byte) []byte
	}{
		{"payload-byte", early.off, func(b []byte) []byte { b[early.off+recHeaderSize+5] ^= 0x40; return b }},
		{"seq-byte", early.off, func(b []byte) []byte { b[early.off+12] ^= 1; return b }},
		{"length-byte", early.off, func(b []byte) []byte { b[early.off+4] ^= 0x10; return b }},
		{"garbage-over-record", early.off, func(b []byte) []byte {
			copy(b[early.off:], "garbage garbage garbage")
			return b
		}},
		{"zeroed-record", early.off, func(b []byte) []byte { clear(b[early.off:early.end]); return b }},
		{"replayed-record", recs[len(recs)-1].end, func(b []byte) []byte {
			return append(b, b[early.off:early.end]...) // intact, but out of sequence
		}},
		{"snapshot-record", logHeaderSize, func(b []byte) []byte { b[logHeaderSize+recHeaderSize+2] ^= 0xff; return b }},
		{"file-header", -1, func(b []byte) []byte { b[20] ^= 1; return b }},
		{"truncated-header", -1, func(b []byte) []byte { return b[:40] }},
		{"truncated-in-snapshot", -1, func(b []byte) []byte { return b[:h.snapEnd-3] }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := copyFile(t, orig)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, c.harm(b), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, repair := range []bool{false, true} { // damage is never repaired
				before, _ := os.ReadFile(path)
				w, err := Open(Config{Path: path, RepairTornTail: repair})
				if err == nil {
					_ = w.Close()
					t.Fatal("Open succeeded on a damaged file")
				}
				if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTornTail) {
					t.Fatalf("Open: %v, want ErrCorrupt and not ErrTornTail", err)
				}
				if !strings.Contains(err.Error(), path) || (c.off >= 0 && !strings.Contains(err.Error(), fmt.Sprintf("offset %d", c.off))) {
					t.Fatalf("error does not name the file and offset %d: %v", c.off, err)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
					t.Fatal("the failed Open modified the file")
				}
				if !repair {
					t.Logf("refused as expected: %v", err)
				}
			}
		})
	}
}

// After a failed write the store refuses writes, and memory keeps only
// what the file has.
func TestLogWriteFailure(t *testing.T) {
	t.Parallel()
	s := openTestLog(t, Config{Logger: slog.New(slog.DiscardHandler)})
	if err := s.update(func(tx kvTx) error { return tx.put(bRuns, []byte("a"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	s.mem.mu.Lock()
	_ = s.f.Close() // every write now fails
	s.mem.mu.Unlock()
	err := s.update(func(tx kvTx) error { return tx.put(bRuns, []byte("b"), []byte("2")) })
	if err == nil || !strings.Contains(err.Error(), "takes no more writes") {
		t.Fatalf("update after the file failed: %v", err)
	}
	if got := scanKeys(t, s, bRuns, nil, nil, false); len(got) != 1 || got[0] != "a" {
		t.Fatalf("keys after a failed commit: %q", got)
	}
	if err2 := s.update(func(tx kvTx) error { return nil }); err2 != err {
		t.Fatalf("next update: %v, want the first failure", err2)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A log store whose first bytes are damaged is refused as what it is, a
// log-format store, not reported as a file of another kind; a file that is
// neither format says so.
func TestLogDamagedMagic(t *testing.T) {
	t.Parallel()
	orig, _, _ := logWorld(t)
	for _, c := range []struct {
		name string
		harm func(b []byte) []byte
		want []string
	}{
		{"one-byte", func(b []byte) []byte { b[0] ^= 0x20; return b }, []string{"a log-format store whose first bytes are damaged", "the first record's marker"}},
		{"magic-zeroed", func(b []byte) []byte { clear(b[:8]); return b }, []string{"a log-format store", "the header's version and length and the first record's marker"}},
		{"first-32-bytes", func(b []byte) []byte { copy(b, bytes.Repeat([]byte{0xee}, 32)); return b }, []string{"a log-format store", "the first record's marker"}},
		{"whole-header-and-record", func(b []byte) []byte { copy(b, bytes.Repeat([]byte("x"), 4096)); return b }, []string{"not a localworld store", "neither \"SKEINLOG\" (a log-format store) nor a bbolt page"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := copyFile(t, orig)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, c.harm(b), 0o600); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			w, err := Open(Config{Path: path})
			if err == nil {
				_ = w.Close()
				t.Fatal("Open succeeded on a damaged file")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v, want ErrCorrupt naming the file", err)
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the failed Open modified the file")
			}
		})
	}
}
