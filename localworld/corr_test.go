package localworld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/skeinflow/skein/world"
)

// corrFixture appends, to two runs, the events of one step ID in both (a
// step started and retried n times in each, interleaved with another
// step's), and returns the runs and the sequence numbers of the shared
// step's events in each.
func corrFixture(t *testing.T, w *World, n int) (step string, runs []string, seqs map[string][]int64) {
	t.Helper()
	step = testIDs.New(world.PrefixStep)
	runs = []string{newRun(t, w, "wf"), newRun(t, w, "wf")}
	seqs = map[string][]int64{}
	add := func(runID string, evs ...world.EventInput) {
		res := mustAppend(t, w, runID, evs...)
		for i, e := range evs {
			if e.CorrelationID == step {
				seqs[runID] = append(seqs[runID], res.Results[i].Event.Seq)
			}
		}
	}
	for _, r := range runs {
		add(r, ev(step, &world.StepCreated{StepName: "s"}))
	}
	for i := range n {
		for _, r := range runs {
			other := testIDs.New(world.PrefixStep)
			add(r, ev(step, &world.StepStarted{}), ev(other, &world.StepCreated{StepName: "o"}))
			if i%3 == 0 {
				add(r, ev(other, &world.StepStarted{}))
			}
			add(r, ev(step, &world.StepRetrying{Error: &world.ErrorData{Message: "again"}}))
		}
	}
	return step, runs, seqs
}

// listCorr pages through ListEventsByCorrelation with limit, returning
// the runs and sequence numbers of the events listed.
func listCorr(t *testing.T, w *World, corr, runID string, limit int, desc bool) []string {
	t.Helper()
	var got []string
	p := &world.ListEventsByCorrelationParams{CorrelationID: corr, RunID: runID,
		Pagination: world.Pagination{Limit: limit, Descending: desc}}
	for pages := 0; ; pages++ {
		pg, err := w.ListEventsByCorrelation(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range pg.Items {
			got = append(got, fmt.Sprint(e.RunID, "/", e.Seq))
		}
		if !pg.HasMore {
			return got
		}
		if pages > 1000 {
			t.Fatal("no end of the listing")
		}
		p.Pagination.Cursor = pg.Cursor
	}
}

// checkCorrListings checks every listing of step's events, one run and
// all, both orders, at page sizes 1 to 6 and 100, against seqs.
func checkCorrListings(t *testing.T, w *World, step string, runs []string, seqs map[string][]int64) {
	t.Helper()
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b string) int { return slices.Compare(newKey().str(a), newKey().str(b)) })
	var all []string
	for _, r := range sorted {
		for _, s := range seqs[r] {
			all = append(all, fmt.Sprint(r, "/", s))
		}
	}
	for _, limit := range []int{1, 2, 3, 4, 5, 6, 100} {
		for _, desc := range []bool{false, true} {
			for _, runID := range append([]string{""}, runs...) {
				var want []string
				for _, e := range all {
					if runID == "" || e[:len(runID)] == runID {
						want = append(want, e)
					}
				}
				if desc {
					slices.Reverse(want)
				}
				if got := listCorr(t, w, step, runID, limit, desc); !slices.Equal(got, want) {
					t.Fatalf("run %q limit %d desc %v:\ngot  %v\nwant %v", runID, limit, desc, got, want)
				}
			}
		}
	}
}

// TestCorrelationChunks: a correlation's events in a run share index
// entries (up to corrChunk each), and every listing pages over the events
// exactly, whatever the page size and order, in one run or all.
func TestCorrelationChunks(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		step, runs, seqs := corrFixture(t, w, 20) // 41 events a run: 3 chunks
		entries := 0
		_ = w.s.kv.view(func(tx kvTx) error {
			return tx.scan(bEventsByCorr, newKey().str(step), prefixEnd(newKey().str(step)), false, func(_, _ []byte) bool {
				entries++
				return true
			})
		})
		if want := 2 * ((41 + corrChunk - 1) / corrChunk); entries != want {
			t.Errorf("%d index entries for 82 events in two runs, want %d", entries, want)
		}
		checkCorrListings(t, w, step, runs, seqs)
	})
}

// TestCorrelationLayout1Entries: a store whose index holds layout 1's
// entries (one per event, empty) lists the same, and goes on: the next
// events of a correlation join its last entry.
func TestCorrelationLayout1Entries(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	step, runs, seqs := corrFixture(t, w, 4)
	err := w.s.kv.update(func(tx kvTx) error {
		var old [][]byte
		_ = tx.scan(bEventsByCorr, nil, nil, false, func(k, _ []byte) bool {
			old = append(old, k)
			return true
		})
		for _, k := range old {
			if err := tx.del(bEventsByCorr, k); err != nil {
				return err
			}
		}
		for _, r := range runs {
			for _, s := range seqs[r] {
				if err := tx.put(bEventsByCorr, newKey().str(step).str(r).seq(s), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCorrListings(t, w, step, runs, seqs)
	for _, r := range runs {
		res := mustAppend(t, w, r, ev(step, &world.StepStarted{}))
		seqs[r] = append(seqs[r], res.Results[0].Event.Seq)
	}
	checkCorrListings(t, w, step, runs, seqs)
}

// TestCorrelationChunkDamaged: an index entry that does not decode, that
// holds more events than an entry can, that holds events another entry
// holds, or that names another correlation's event is ErrCorrupt in a
// listing; one that does not decode also in the next Append to its
// correlation.
func TestCorrelationChunkDamaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(step, run string, seqs []int64) (k, v []byte)
		append bool
	}{
		{"a uvarint cut short", func(step, run string, seqs []int64) ([]byte, []byte) {
			return newKey().str(step).str(run).seq(seqs[0]), []byte{0x80}
		}, true},
		{"more events than an entry holds", func(step, run string, seqs []int64) ([]byte, []byte) {
			return newKey().str(step).str(run).seq(seqs[0]), bytes.Repeat([]byte{1}, corrChunk)
		}, false},
		{"an entry inside another", func(step, run string, seqs []int64) ([]byte, []byte) {
			return newKey().str(step).str(run).seq(seqs[1]), nil
		}, false},
		{"another correlation's event", func(step, run string, seqs []int64) ([]byte, []byte) {
			return newKey().str(step).str(run).seq(seqs[0]), []byte{byte(seqs[1] - seqs[0] + 1)}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := mustOpen(t, Config{})
			step, runs, seqs := corrFixture(t, w, 1)
			run := runs[0]
			k, v := tc.damage(step, run, seqs[run])
			if err := w.s.kv.update(func(tx kvTx) error { return tx.put(bEventsByCorr, k, v) }); err != nil {
				t.Fatal(err)
			}
			_, err := w.ListEventsByCorrelation(context.Background(), &world.ListEventsByCorrelationParams{CorrelationID: step, RunID: run})
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, world.ErrCorrupt) {
				t.Fatalf("listing: %v, want ErrCorrupt", err)
			}
			if !tc.append {
				return
			}
			_, err = w.Append(context.Background(), &world.AppendParams{RunID: run, Events: []world.EventInput{ev(step, &world.StepStarted{})}})
			if !errors.Is(err, world.ErrCorrupt) {
				t.Fatalf("Append to a damaged entry's correlation: %v, want ErrCorrupt", err)
			}
		})
	}
}
