package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// damagedLog is a World whose logs read as damaged once holed (as
// dynamoworld reports a deleted commit item), counting appends from then.
type damagedLog struct {
	world.World
	holed   atomic.Bool
	appends atomic.Int32
}

func (w *damagedLog) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if w.holed.Load() {
		return nil, fmt.Errorf("%w: run %s: events 4-4 are missing", world.ErrCorrupt, p.RunID)
	}
	return w.World.ListEvents(ctx, p)
}

func (w *damagedLog) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if w.holed.Load() {
		w.appends.Add(1)
	}
	return w.World.Append(ctx, p)
}

// TestCancelDamagedRunWritesNothing: the trial's `skein runs cancel` and
// `skein runs fail` appended with no fence and read no log, so on a run
// missing commit items they wrote run_cancelled/run_failed at the deleted
// sequence numbers. Both now read the log first: the World's
// world.ErrCorrupt, nothing written.
func TestCancelDamagedRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	w := &damagedLog{World: lw}
	client, err := sdk.NewClient(sdk.ClientConfig{World: w})
	if err != nil {
		t.Fatal(err)
	}
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: "damaged", Input: json.RawMessage("null")}},
		{Data: &world.RunStarted{}},
	}}); err != nil {
		t.Fatal(err)
	}
	w.holed.Store(true)
	if err := client.Cancel(ctx, runID, "by hand"); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("Cancel: %v, want world.ErrCorrupt", err)
	}
	if err := client.FailRun(ctx, runID, "by hand"); !errors.Is(err, world.ErrCorrupt) {
		t.Errorf("FailRun: %v, want world.ErrCorrupt", err)
	}
	if n := w.appends.Load(); n != 0 {
		t.Fatalf("%d appends to a run whose log is damaged, want none", n)
	}
	// Once the log reads whole again, the cancellation goes through.
	w.holed.Store(false)
	if err := client.Cancel(ctx, runID, "by hand"); err != nil {
		t.Fatal(err)
	}
	if r, err := lw.GetRun(ctx, &world.GetRunParams{RunID: runID}); err != nil || r.Status != world.RunStatusCancelled {
		t.Fatalf("run after the cancel: %+v, %v", r, err)
	}
}
