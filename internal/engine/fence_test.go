package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// fenceFixture is an engine over a holedWorld (corrupt_test.go) and a
// helper that writes a run's events before the hole appears.
type fenceFixture struct {
	t   *testing.T
	w   *holedWorld
	eng *Engine
	ids *world.IDSource
}

func newFenceFixture(t *testing.T, cfg Config) *fenceFixture {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	w := &holedWorld{World: lw}
	reg := newRegistry()
	reg.wf("holed", func(c *Context, _ json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	cfg.World, cfg.Registry = w, reg
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return &fenceFixture{t: t, w: w, eng: eng, ids: world.NewIDSource(nil, nil)}
}

// run appends a run's first events (run_created, run_started, then evs)
// and returns its ID.
func (f *fenceFixture) run(evs ...world.EventInput) string {
	f.t.Helper()
	runID := f.ids.New(world.PrefixRun)
	all := append([]world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "holed", Input: json.RawMessage("null")}},
		{Data: &world.RunStarted{}},
	}, evs...)
	if _, err := f.w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: all}); err != nil {
		f.t.Fatal(err)
	}
	return runID
}

// TestWritersOutsideReplayWriteNothingOnAHole: the trial's `runs cancel`
// and `runs fail`, and the rest after the run's end, appended with no
// fence and read no log, so on a run missing commit items they wrote new
// events at the deleted sequence numbers. Every such writer now reads the
// log first (the World reports the hole) and writes nothing.
func TestWritersOutsideReplayWriteNothingOnAHole(t *testing.T) {
	ctx := context.Background()
	lost := &world.ErrorData{Type: TypeExecutorLost, Message: "lost"}
	for _, tc := range []struct {
		name string
		// setup writes the run(s) and returns the writer, which returns
		// its error (nil for writers that only log).
		setup   func(f *fenceFixture) func() error
		wantErr bool
	}{
		{"FailRun (runs fail)", func(f *fenceFixture) func() error {
			runID := f.run()
			return func() error {
				return FailRun(ctx, f.w, slog.New(slog.DiscardHandler), time.Now, runID, "", "by hand", nil)
			}
		}, true},
		{"failDeliveries (MaxDeliveries)", func(f *fenceFixture) func() error {
			runID := f.run()
			return func() error { return f.eng.HandleDelivery(ctx, world.Message{RunID: runID}, 4) }
		}, true},
		{"cancelChild (a cancelled parent's children)", func(f *fenceFixture) func() error {
			parent, child := f.run(), f.run()
			return func() error { f.eng.rest.cancelChild(ctx, parent, child); return nil }
		}, false},
		{"deactivate (the rest after the end)", func(f *fenceFixture) func() error {
			runID := f.run(world.EventInput{Data: &world.RunFailed{Error: lost}})
			return func() error { f.eng.rest.deactivate(ctx, runID); return nil }
		}, false},
		{"record (a step's outcome after the end)", func(f *fenceFixture) func() error {
			step := f.ids.New(world.PrefixStep)
			runID := f.run(
				world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage("1")}},
				world.EventInput{CorrelationID: step, Data: &world.StepStarted{LeaseTTL: time.Minute}},
				world.EventInput{Data: &world.RunCancelled{Reason: "x"}},
			)
			return func() error {
				return f.eng.steps.record(ctx, runID, outcome{stepID: step, stepName: "s", kind: outFailed, failure: lost})
			}
		}, true},
		{"failStuck (a blocked workflow)", func(f *fenceFixture) func() error {
			runID := f.run()
			return func() error { f.eng.leases.failStuck(ctx, runID, lost, world.CodeRuntimeError); return nil }
		}, false},
		{"failRunOverLimit", func(f *fenceFixture) func() error {
			runID := f.run()
			return func() error {
				_, err := f.eng.steps.failRunOverLimit(ctx, runID, &world.LimitError{Limit: "MaxRunBytes", Max: 1, Size: 2})
				return err
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFenceFixture(t, Config{Options: Options{MaxDeliveries: 3}})
			write := tc.setup(f)
			f.w.holed.Store(true)
			err := write()
			if n := f.w.appends.Load(); n != 0 {
				t.Fatalf("%d appends to a run whose log is damaged, want none", n)
			}
			if tc.wantErr && !errors.Is(err, world.ErrCorrupt) {
				t.Fatalf("err = %v, want one matching world.ErrCorrupt", err)
			}
		})
	}
}

// TestCheckedLastSeqFindsAGap: a log whose events skip a number is
// world.ErrCorrupt even when the World does not say so.
func TestCheckedLastSeqFindsAGap(t *testing.T) {
	ctx := context.Background()
	f := newFenceFixture(t, Config{})
	runID := f.run(world.EventInput{Data: &world.AttributeSet{Attributes: map[string]string{"a": "b"}}})
	if last, err := CheckedLastSeq(ctx, f.w, runID); err != nil || last != 3 {
		t.Fatalf("CheckedLastSeq = %d, %v, want 3", last, err)
	}
	gap := &gapWorld{World: f.w, skip: 2}
	if _, err := CheckedLastSeq(ctx, gap, runID); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("CheckedLastSeq of a log missing event 2: %v, want world.ErrCorrupt", err)
	}
	if _, err := AppendFenced(ctx, gap, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCancelled{}}}}); !errors.Is(err, world.ErrCorrupt) {
		t.Fatalf("AppendFenced on a log missing event 2: %v, want world.ErrCorrupt", err)
	}
	if _, err := CheckedLastSeq(ctx, f.w, f.ids.New(world.PrefixRun)); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("CheckedLastSeq of an unknown run: %v, want world.ErrNotFound", err)
	}
}

// gapWorld leaves one event out of every listing of a log.
type gapWorld struct {
	world.World
	skip int64
}

func (w *gapWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	page, err := w.World.ListEvents(ctx, p)
	if err != nil {
		return nil, err
	}
	out := *page
	out.Items = nil
	for _, ev := range page.Items {
		if ev.Seq != w.skip {
			out.Items = append(out.Items, ev)
		}
	}
	return &out, nil
}

// TestAppendFencedRacesALiveWriter: a writer appending between the checked
// read and the fenced append (a live worker's commit) refuses the fence;
// the append reads the log again and lands after the other's events.
func TestAppendFencedRacesALiveWriter(t *testing.T) {
	ctx := context.Background()
	f := newFenceFixture(t, Config{})
	runID := f.run()
	race := &racingWorld{World: f.w, runID: runID}
	race.races.Store(3)
	res, err := AppendFenced(ctx, race, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Results[0].Event.Seq; got != 6 {
		t.Fatalf("run_cancelled at %d, want 6 (after the three racing commits)", got)
	}
	race.races.Store(maxAppendFences)
	runID2 := f.run()
	race.runID = runID2
	_, err = AppendFenced(ctx, race, &world.AppendParams{RunID: runID2, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "x"}}}})
	if err == nil || errors.Is(err, world.ErrConflict) {
		t.Fatalf("a run moving on at every try: %v, want an error not matching world.ErrConflict (the run has not ended)", err)
	}
}

// racingWorld appends an attribute to runID before each fenced Append, as
// long as races lasts.
type racingWorld struct {
	world.World
	runID string
	races atomic.Int32
}

func (w *racingWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if p.IfLastSeq > 0 && w.races.Add(-1) >= 0 {
		if _, err := w.World.Append(ctx, &world.AppendParams{RunID: w.runID, Events: []world.EventInput{{Data: &world.AttributeSet{Attributes: map[string]string{"k": "v"}}}}}); err != nil {
			return nil, err
		}
	}
	return w.World.Append(ctx, p)
}
