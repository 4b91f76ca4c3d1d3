package localworld

import (
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
		"run": &world.Run{RunID: "wrun_1", WorkflowName: "wf\u2028", Status: world.RunStatusRunning, CreatedAt: at},
		"event": storedEventOf(&world.Event{RunID: "wrun_1", EventID: "evt_1", Seq: 3, CreatedAt: at,
			CorrelationID: "step_1", Data: &world.StepCompleted{Result: []byte(`"<ok>"`)}}),
	}
}

// TestPutEncodedStoresWhatEncodeMakes: putEncoded stores the bytes encode
// makes (json.Marshal's, without Encoder's newline), and a store keeps them
// although the encoding buffer is reused: the memory store's copy, and the
// log's record of it, read back after reopening.
func TestPutEncodedStoresWhatEncodeMakes(t *testing.T) {
	t.Parallel()
	vals := encodedValues()
	want := map[string]string{}
	for name, v := range vals {
		b, err := encode(v)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = string(b)
	}
	check := func(t *testing.T, s kvStore) {
		t.Helper()
		err := s.view(func(tx kvTx) error {
			for name := range vals {
				if got := string(tx.get(bRuns, []byte(name))); got != want[name] {
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
// no more than encoding it alone: the store's copy is the value's one
// allocation (json.Marshal's result, then put's copy of it, were two).
func TestPutEncodedAllocatesTheValueOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled encoders at random")
	}
	s := newMemStore()
	for name, v := range encodedValues() {
		k := []byte(name)
		alone := testing.AllocsPerRun(200, func() {
			if _, err := encode(v); err != nil {
				t.Fatal(err)
			}
		})
		var stored float64
		err := s.update(func(tx kvTx) error {
			stored = testing.AllocsPerRun(200, func() {
				if err := putEncoded(tx, bRuns, k, v); err != nil {
					t.Fatal(err)
				}
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if stored > alone {
			t.Errorf("%s: putEncoded made %v allocations, encode alone %v", name, stored, alone)
		}
	}
}
