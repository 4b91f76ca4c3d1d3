package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// holedWorld is a World whose run logs read as damaged (a missing range,
// as dynamoworld reports a deleted commit item), counting the appends
// made after it turns so.
type holedWorld struct {
	world.World
	holed   atomic.Bool
	appends atomic.Int32
}

func (w *holedWorld) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if w.holed.Load() {
		return nil, fmt.Errorf("%w: run %s: events 5-7 are missing", world.ErrCorrupt, p.RunID)
	}
	return w.World.ListEvents(ctx, p)
}

func (w *holedWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if w.holed.Load() {
		w.appends.Add(1)
	}
	return w.World.Append(ctx, p)
}

// TestCorruptLogDropsTheMessage: a run whose log the World finds damaged
// was retried for MaxDeliveries deliveries (the trial: 48, about 19
// minutes), then failed MAX_DELIVERIES with events appended where deleted
// ones had been. Its delivery is now a *PermanentError matching
// world.ErrCorrupt at once, and nothing is appended.
func TestCorruptLogDropsTheMessage(t *testing.T) {
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	w := &holedWorld{World: lw}
	reg := newRegistry()
	reg.wf("holed", func(c *Context, _ json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	eng, err := New(Config{World: w, Registry: reg, Options: Options{MaxDeliveries: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	ctx := context.Background()
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "holed", Input: json.RawMessage("null")}}}}); err != nil {
		t.Fatal(err)
	}
	w.holed.Store(true)
	for attempt := 1; attempt <= 2; attempt++ {
		err := eng.HandleDelivery(ctx, world.Message{RunID: runID}, attempt)
		if !IsPermanent(err) || !errors.Is(err, world.ErrCorrupt) {
			t.Fatalf("delivery %d: %v, want a *PermanentError matching world.ErrCorrupt", attempt, err)
		}
	}
	if n := w.appends.Load(); n != 0 {
		t.Fatalf("%d appends to a run whose log is damaged, want none", n)
	}
}

// TestLateReasonNamesTheCause: a stalled executor that had lost its run's
// lease logged "record step result after run end" though the run had not
// ended, and one that found the run damaged (world.ErrCorrupt) that the
// run had ended. The line now names the cause.
func TestLateReasonNamesTheCause(t *testing.T) {
	lost := fmt.Errorf("append: %w", world.ErrLeaseLost)
	for _, tc := range []struct {
		err    error
		status world.RunStatus
		want   string
	}{
		{lost, world.RunStatusRunning, "lost the run's lease"},
		{errors.New("x"), world.RunStatusCompleted, "the run has ended (completed)"},
		{errors.New("x"), world.RunStatusHeld, "the run is held"},
		{errors.New("x"), world.RunStatusRunning, "the World refused it"},
		// It logged "the run has ended (cancelled)" for a damaged run.
		{fmt.Errorf("append: %w: events 4-4 are missing", world.ErrCorrupt), world.RunStatusCancelled, "the run's stored data is damaged, so nothing was written"},
	} {
		if got := lateReason(tc.err, tc.status); !strings.Contains(got, tc.want) {
			t.Errorf("lateReason(%v, %s) = %q, want %q in it", tc.err, tc.status, got, tc.want)
		}
	}
}
