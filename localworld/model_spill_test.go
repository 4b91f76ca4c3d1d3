package localworld

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

var errModelRollback = errors.New("rollback on purpose")

func modelValue(r *rand.Rand, tag string) []byte {
	var n int
	switch r.IntN(4) {
	case 0:
		n = 0
	case 1:
		n = r.IntN(70)
	default:
		n = 60 + r.IntN(300)
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte('a' + r.IntN(26))
	}
	copy(v, tag)
	return v
}

var modelBuckets = []bucketID{bRuns, bEvents, bSteps, bHooks, bStreamChunks, bLeases, bMeta}

// TestSpillModel: several writers (group commits), each owning its keys,
// random puts, deletes and rolled-back transactions with a tiny spill
// window and compaction threshold, each writer checking all its keys
// against its model after every transaction, readers scanning meanwhile
// (through compactions' switches), and a reopen between rounds.
func TestSpillModel(t *testing.T) {
	t.Parallel()
	for _, policy := range []SyncPolicy{SyncBatch, SyncNone} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			t.Parallel()
			var compactions int64
			path := filepath.Join(t.TempDir(), "kv.db")
			cfg := Config{Path: path, Sync: policy, spillWindow: 300, compactMin: 8 << 10, Logger: slog.New(slog.DiscardHandler)}
			const writers = 6
			models := make([]map[string][]byte, writers)
			for i := range models {
				models[i] = map[string][]byte{}
			}
			for round := range 3 {
				s := openTestLog(t, cfg)
				var stop atomic.Bool
				var wg, rg sync.WaitGroup
				// readers
				for range 2 {
					rg.Go(func() {
						for !stop.Load() {
							err := s.view(func(tx kvTx) error {
								for _, b := range modelBuckets {
									if err := tx.scan(b, nil, nil, round%2 == 0, func(k, v []byte) bool { return true }); err != nil {
										return err
									}
								}
								return nil
							})
							if err != nil {
								t.Error("reader:", err)
								return
							}
						}
					})
				}
				for w := range writers {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
						m := models[w]
						key := func() (bucketID, []byte) {
							b := modelBuckets[r.IntN(len(modelBuckets))]
							return b, []byte(fmt.Sprintf("w%d-k%02d", w, r.IntN(25)))
						}
						check := func(tx kvTx, b bucketID, k []byte) error {
							v, err := tx.get(b, k)
							if err != nil {
								return err
							}
							want, ok := m[fmt.Sprintf("%d/%s", b, k)]
							if ok != (v != nil) || !bytes.Equal(v, want) {
								return fmt.Errorf("get %s/%s = %q (present %v), want %q (present %v)", b, k, v, v != nil, want, ok)
							}
							return nil
						}
						for op := range 200 {
							n := 1 + r.IntN(4)
							fail := r.IntN(5) == 0
							staged := map[string][]byte{}
							dels := map[string]bool{}
							err := s.update(func(tx kvTx) error {
								for range n {
									b, k := key()
									mk := fmt.Sprintf("%d/%s", b, k)
									if r.IntN(4) == 0 {
										if err := tx.del(b, k); err != nil {
											return err
										}
										delete(staged, mk)
										dels[mk] = true
									} else {
										v := modelValue(r, fmt.Sprintf("%d.%d.", op, w))
										kk := append([]byte(nil), k...)
										if err := tx.put(b, kk, v); err != nil {
											return err
										}
										staged[mk] = v
										delete(dels, mk)
									}
								}
								if fail {
									return errModelRollback
								}
								return nil
							})
							if fail != (err != nil) {
								t.Errorf("update: %v", err)
								return
							}
							if !fail {
								for k := range dels {
									delete(m, k)
								}
								for k, v := range staged {
									m[k] = v
								}
							}
							// verify all own keys
							err = s.view(func(tx kvTx) error {
								for _, b := range modelBuckets {
									for i := range 25 {
										if err := check(tx, b, []byte(fmt.Sprintf("w%d-k%02d", w, i))); err != nil {
											return err
										}
									}
								}
								return nil
							})
							if err != nil {
								t.Errorf("writer %d round %d op %d: %v", w, round, op, err)
								return
							}
						}
					})
				}
				wg.Wait()
				stop.Store(true)
				rg.Wait()
				if t.Failed() {
					return
				}
				waitFor(t, func() bool { return !compacting(s) })
				compactions += s.compactions.Load()
				full := map[string]string{}
				for _, m := range models {
					for k, v := range m {
						full[k] = string(v)
					}
				}
				got := map[string]string{}
				_ = s.view(func(tx kvTx) error {
					for _, b := range modelBuckets {
						_ = tx.scan(b, nil, nil, false, func(k, v []byte) bool {
							if bytes.HasPrefix(k, []byte("w")) {
								got[fmt.Sprintf("%d/%s", b, k)] = string(v)
							}
							return true
						})
					}
					return nil
				})
				if len(got) != len(full) {
					t.Fatalf("round %d: %d keys, want %d", round, len(got), len(full))
				}
				for k, v := range full {
					if got[k] != v {
						t.Fatalf("round %d: %s = %q want %q", round, k, got[k], v)
					}
				}
				if err := s.close(); err != nil {
					t.Fatal(err)
				}
			}
			if compactions < 3 {
				t.Fatalf("%d compactions in 3 rounds: the test did not reach what it is for", compactions)
			}
		})
	}
}
