package localworld

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// encodedValues are values as the hot paths store them (putStep, putRun,
// writeEffect), with characters encode escapes.
func encodedValues() map[string]any {
	at := time.Date(2026, 11, 30, 6, 0, 0, 123, time.UTC)
	return map[string]any{
		"step": &world.Step{RunID: "wrun_1", StepID: "step_1", StepName: "a<b>&c", Status: world.StepStatusRunning,
			Input: []byte(`{"html":"<tag>&amp;"}`), CreatedAt: at},
		"run":  &world.Run{RunID: "wrun_1", WorkflowName: "wf\u2028", Status: world.RunStatusRunning, CreatedAt: at},
		"hook": &storedHook{Hook: world.Hook{HookID: "hook_1", RunID: "wrun_1", Token: "<t>", CreatedAt: at}, Seq: 2},
		"event": storedEventOf(&world.Event{RunID: "wrun_1", EventID: "evt_1", Seq: 3, CreatedAt: at,
			CorrelationID: "step_1", Data: &world.StepCompleted{Result: []byte(`"<ok>"`)}}),
	}
}

// TestPutEncodedStoresWhatEncodeMakes: putEncoded stores the bytes the
// binary encoding makes for a record it holds, else encode's (json.Marshal's,
// without Encoder's newline), and a store keeps them
// although the encoding buffer is reused: the memory store's copy, and the
// log's record of it, read back after reopening.
func TestPutEncodedStoresWhatEncodeMakes(t *testing.T) {
	t.Parallel()
	vals := encodedValues()
	want := map[string]string{}
	for name, v := range vals {
		want[name] = encodeFresh(t, v)
	}
	check := func(t *testing.T, s kvStore) {
		t.Helper()
		err := s.view(func(tx kvTx) error {
			for name := range vals {
				v, err := tx.get(bRuns, []byte(name))
				if got := string(v); err != nil || got != want[name] {
					t.Errorf("%s stored as\n%s\nwant\n%s", name, got, want[name])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put := func(t *testing.T, s kvStore) {
		t.Helper()
		for name, v := range vals { // one transaction each: the buffer is reused
			if err := s.update(func(tx kvTx) error { return putEncoded(tx, bRuns, []byte(name), v) }); err != nil {
				t.Fatal(err)
			}
		}
		err := s.update(func(tx kvTx) error { // and reused within one
			for name, v := range vals {
				if err := putEncoded(tx, bRuns, []byte(name), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("mem", func(t *testing.T) {
		s := newMemStore()
		put(t, s)
		check(t, s)
	})
	t.Run("log", func(t *testing.T) {
		s := openTestLog(t, Config{Sync: SyncNone})
		put(t, s)
		check(t, s)
		path := s.path
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
		check(t, openTestLog(t, Config{Path: path, Sync: SyncNone}))
	})
}

// TestPutEncodedAllocatesTheValueOnce: storing an encoded value allocates
// one fewer time than encoding it and putting it (json.Marshal's result,
// then put's copy of it): the store's copy is the value's one allocation.
// Means over many commits, with and without the race detector (whose
// pools drop items at random, so single counts vary).
func TestPutEncodedAllocatesTheValueOnce(t *testing.T) {
	s := newMemStore()
	mallocs := func(f func(tx kvTx) error) float64 {
		const n = 2000
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		for range n {
			if err := s.update(f); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&b)
		return float64(b.Mallocs-a.Mallocs) / n
	}
	for name, v := range encodedValues() {
		k := []byte(name)
		twice := mallocs(func(tx kvTx) error {
			b, err := encode(v)
			if err != nil {
				return err
			}
			return tx.put(bRuns, k, b)
		})
		once := mallocs(func(tx kvTx) error { return putEncoded(tx, bRuns, k, v) })
		if saved := twice - once; saved < 0.5 {
			t.Errorf("%s: encode and put %.2f allocations per commit, putEncoded %.2f: want one fewer", name, twice, once)
		}
	}
}

// encodeFresh is what putEncoded stores for v, encoded with buffers of
// its own.
func encodeFresh(t *testing.T, v any) string {
	t.Helper()
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	if b, err := appendBinary(nil, v, e); err == nil {
		return string(b)
	}
	b, err := encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
