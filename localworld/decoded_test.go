package localworld

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestDecodedServesTheNextCommit: a serial step's commit reads back the
// run and the step the commit before wrote; it decodes neither again.
func TestDecodedServesTheNextCommit(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		step := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s"}), ev(step, &world.StepStarted{}))
		c := &w.s.decoded
		c.mu.Lock()
		hits, misses := c.hits, c.misses
		c.mu.Unlock()
		const n = 20
		for range n {
			next := testIDs.New(world.PrefixStep)
			mustAppend(t, w, runID, ev(step, &world.StepCompleted{Result: []byte(`1`)}),
				ev(next, &world.StepCreated{StepName: "s"}), ev(next, &world.StepStarted{}))
			step = next
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		// Each commit reads the run and step k (the commit before wrote
		// both); step k+1, once created, is the commit's own (commitSteps).
		// Values moved to disk right after their commit are new versions,
		// read back and decoded (spill.go).
		wantHits, wantMisses := 2*n, 0
		if m.spillWindow == 1 {
			wantHits, wantMisses = 0, 2*n
		}
		if got := c.hits - hits; got != wantHits {
			t.Errorf("%d reads served, want %d", got, wantHits)
		}
		if got := c.misses - misses; got != wantMisses {
			t.Errorf("%d reads decoded, want %d", got, wantMisses)
		}
	})
}

// TestDecodedMissesARolledBackWrite: a commit refused after it wrote a
// step leaves the step as it was, and so does the next commit's read.
func TestDecodedMissesARolledBackWrite(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		w := mustOpen(t, m.config(t))
		runID := newRun(t, w, "wf")
		step := testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s"}))
		_, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			ev(step, &world.StepStarted{}),
			ev(testIDs.New(world.PrefixStep), &world.StepCompleted{}), // no such step: refused
		}})
		if !errors.Is(err, world.ErrNotFound) {
			t.Fatalf("commit with an unknown step: %v, want ErrNotFound", err)
		}
		res := mustAppend(t, w, runID, ev(step, &world.StepStarted{}))
		if st := res.Results[0].Step; st == nil || st.Status != world.StepStatusRunning || st.Attempt != 1 {
			t.Fatalf("step_started after the rolled-back one: %+v", st)
		}
	})
}

// putCounter counts a transaction's puts by bucket.
type putCounter struct {
	kvTx
	puts map[bucketID]int
}

func (p *putCounter) put(b bucketID, k, v []byte) error {
	p.puts[b]++
	return p.kvTx.put(b, k, v)
}

// TestCommitWritesEachStepOnce: a serial step's commit (step k completed,
// step k+1 created and started) encodes and writes each step once, in
// its final state, as it does the run.
func TestCommitWritesEachStepOnce(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	runID := newRun(t, w, "wf")
	step, next := testIDs.New(world.PrefixStep), testIDs.New(world.PrefixStep)
	mustAppend(t, w, runID, ev(step, &world.StepCreated{StepName: "s"}), ev(step, &world.StepStarted{}))
	pc := &putCounter{puts: map[bucketID]int{}}
	err := w.s.kv.update(func(tx kvTx) error {
		pc.kvTx = tx
		_, err := w.s.appendTx(pc, &world.AppendParams{RunID: runID, Events: []world.EventInput{
			ev(step, &world.StepCompleted{Result: []byte(`1`)}), ev(next, &world.StepCreated{StepName: "s"}), ev(next, &world.StepStarted{}),
		}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if pc.puts[bSteps] != 2 || pc.puts[bRuns] != 1 || pc.puts[bStepsByRun] != 1 {
		t.Fatalf("puts: steps %d, runs %d, steps_by_run %d; want 2, 1, 1", pc.puts[bSteps], pc.puts[bRuns], pc.puts[bStepsByRun])
	}
	st, err := w.GetStep(context.Background(), &world.GetStepParams{RunID: runID, StepID: next})
	if err != nil || st.Status != world.StepStatusRunning || st.Attempt != 1 {
		t.Fatalf("step k+1: %+v, %v", st, err)
	}
}

// decodedCounts returns the cache's hits and misses so far.
func decodedCounts(c *decodedCache) (hits, misses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// TestDecodedServesAWideFanOut: the steps of a fan-out of thousands,
// created in one commit and started and ended in batches of 16 (as
// background executors do), are read from the cache, not decoded: the
// cache holds every open step of the fan-out.
func TestDecodedServesAWideFanOut(t *testing.T) {
	t.Parallel()
	const n = 5000
	w := mustOpen(t, Config{})
	runID := newRun(t, w, "wf")
	ids := make([]string, n)
	created := make([]world.EventInput, n)
	for i := range ids {
		ids[i] = testIDs.New(world.PrefixStep)
		created[i] = ev(ids[i], &world.StepCreated{StepName: "s", Input: []byte(`{"i":1}`)})
	}
	mustAppend(t, w, runID, created...)
	hits, misses := decodedCounts(&w.s.decoded)
	for at := 0; at < n; at += 16 {
		batch := ids[at:min(at+16, n)]
		var started, ended []world.EventInput
		for _, id := range batch {
			started = append(started, ev(id, &world.StepStarted{}))
			ended = append(ended, ev(id, &world.StepCompleted{Result: []byte(`1`)}))
		}
		mustAppend(t, w, runID, started...)
		mustAppend(t, w, runID, ended...)
	}
	h, m := decodedCounts(&w.s.decoded)
	if h-hits < 2*n || m-misses != 0 {
		t.Errorf("%d step reads served and %d decoded, want at least %d served and none decoded", h-hits, m-misses, 2*n)
	}
}

// TestDecodedForgetsEndedSteps: a step that has ended leaves the cache
// (its run reads its events, not it), so a long run's ended steps are
// not kept in memory.
func TestDecodedForgetsEndedSteps(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	runID := newRun(t, w, "wf")
	var open string
	for range 50 {
		open = testIDs.New(world.PrefixStep)
		mustAppend(t, w, runID, ev(open, &world.StepCreated{StepName: "s"}), ev(open, &world.StepStarted{}))
		mustAppend(t, w, runID, ev(open, &world.StepCompleted{Result: []byte(`1`)}))
	}
	mustAppend(t, w, runID, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s"}))
	c := &w.s.decoded
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.steps.m) != 1 {
		t.Errorf("the cache holds %d steps, want 1 (the open one)", len(c.steps.m))
	}
}

// TestDecodedBoundsItsBytes: steps with large inputs make the cache start
// again before their stored values add up to maxDecodedCost.
func TestDecodedBoundsItsBytes(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	runID := newRun(t, w, "wf")
	input := []byte(`"` + strings.Repeat("x", 1<<20-100) + `"`)
	for range 20 {
		mustAppend(t, w, runID, ev(testIDs.New(world.PrefixStep), &world.StepCreated{StepName: "s", Input: input}))
		c := &w.s.decoded
		c.mu.Lock()
		cost, entries := c.steps.cost, len(c.steps.m)
		c.mu.Unlock()
		if cost > maxDecodedCost || entries > maxDecodedCost>>20 {
			t.Fatalf("the cache holds %d steps costing %d bytes, more than %d", entries, cost, maxDecodedCost)
		}
	}
}

// TestDecodedOwnsWhatItKeeps: a caller that reuses its input's buffer
// after an Append does not change what the store holds: the cached step
// the next commit writes back is the cache's own copy.
func TestDecodedOwnsWhatItKeeps(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		id := newRun(t, w, "wf")
		step := testIDs.New(world.PrefixStep)
		buf := []byte(`{"a":1}`)
		mustAppend(t, w, id, ev(step, &world.StepCreated{StepName: "s", Input: buf}))
		copy(buf, `{"b":2}`) // the caller reuses its buffer
		mustAppend(t, w, id, ev(step, &world.StepStarted{}))
		st, err := w.GetStep(context.Background(), &world.GetStepParams{RunID: id, StepID: step})
		if err != nil || string(st.Input) != `{"a":1}` {
			t.Fatalf("step input %s, %v; want what was appended", st.Input, err)
		}
	})
}

// scribble overwrites, in place, every byte slice, map and struct behind
// the pointers v holds.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			for i := range v.Len() {
				v.Index(i).SetUint('x')
			}
			return
		}
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String && !v.IsNil() {
			v.SetMapIndex(reflect.ValueOf("scribbled"), reflect.ValueOf("x"))
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString("scribbled")
		}
	}
}

// TestOwnedEntitiesShareNothing: ownStep and ownRun leave nothing the
// entity they copy points to shared (filled by reflection: a field added
// to world.Step or world.Run that shares memory fails here).
func TestOwnedEntitiesShareNothing(t *testing.T) {
	t.Parallel()
	f := newFiller(rand.New(rand.NewPCG(7, 7)))
	for range 300 {
		st, run := new(world.Step), new(world.Run)
		f.fill(reflect.ValueOf(st).Elem())
		f.fill(reflect.ValueOf(run).Elem())
		for _, c := range []struct{ orig, own any }{{st, ownStep(st)}, {run, ownRun(run)}} {
			before := deepCopy(reflect.ValueOf(c.own)).Interface()
			scribble(reflect.ValueOf(c.orig))
			if !reflect.DeepEqual(c.own, before) {
				t.Fatalf("%T: the copy changed with the original:\n%+v\n%+v", c.own, before, c.own)
			}
		}
	}
}

// deepCopy copies v and everything its exported fields point to.
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(deepCopy(v.Elem()))
			out.Set(p)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
	case reflect.Slice:
		if !v.IsNil() {
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				s.Index(i).Set(deepCopy(v.Index(i)))
			}
			out.Set(s)
		}
	case reflect.Map:
		if !v.IsNil() {
			m := reflect.MakeMap(v.Type())
			for _, k := range v.MapKeys() {
				m.SetMapIndex(k, deepCopy(v.MapIndex(k)))
			}
			out.Set(m)
		}
	}
	return out
}
