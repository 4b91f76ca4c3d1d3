package localworld

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// storeFixture is a store written by this version (one completed run of
// workflow "fixture" and one queued message); writeStoreFixtureEnv set to 1
// makes TestOpenStoreOfThisVersion write it anew instead of reading it.
// storeFixtureV1 holds the same, written by the last version of layout 1
// (JSON records).
const (
	storeFixture         = "testdata/store-v2.skein"
	storeFixtureV1       = "testdata/store-v1.skein"
	writeStoreFixtureEnv = "SKEIN_WRITE_STORE_FIXTURE"
)

// fixtureEvents are the types of the fixture run's events, in order.
var fixtureEvents = []world.EventType{
	world.EventRunCreated, world.EventRunStarted, world.EventStepCreated,
	world.EventStepStarted, world.EventStepCompleted, world.EventRunCompleted,
}

// A store written by an earlier build opens, and reads back what was
// written: the file format does not change under a Config change. So does
// one of layout 1 (TestLayoutUpgrade follows its upgrade).
func TestOpenStoreOfThisVersion(t *testing.T) {
	t.Parallel()
	if os.Getenv(writeStoreFixtureEnv) == "1" {
		writeStoreFixture(t)
	}
	for _, fixture := range []string{storeFixture, storeFixtureV1} {
		path := copyFixture(t, fixture)
		for _, cfg := range []Config{{Path: path, ReadOnly: true}, {Path: path}} {
			w := mustOpen(t, cfg)
			checkStoreFixture(t, w)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// copyFixture copies the store fixture at path to a new file.
func copyFixture(t *testing.T, fixture string) string {
	t.Helper()
	orig, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "store.skein")
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkStoreFixture(t *testing.T, w *World) {
	t.Helper()
	ctx := context.Background()
	pg, err := w.ListRuns(ctx, &world.ListRunsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Items) != 1 || pg.Items[0].WorkflowName != "fixture" || pg.Items[0].Status != world.RunStatusCompleted || string(pg.Items[0].Output) != `"done"` {
		t.Fatalf("runs %+v, want one completed run of fixture", pg.Items)
	}
	var types []world.EventType
	for _, e := range allEvents(t, w, pg.Items[0].RunID) {
		types = append(types, e.Type())
	}
	if !slices.Equal(types, fixtureEvents) {
		t.Fatalf("events %v, want %v", types, fixtureEvents)
	}
	if w.s.cfg.ReadOnly {
		return
	}
	msgs, err := w.Receive(ctx, &world.ReceiveParams{Max: 10})
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "queued" {
		t.Fatalf("Receive: %+v, %v; want the queued message", msgs, err)
	}
}

// writeStoreFixture writes storeFixture with this build.
func writeStoreFixture(t *testing.T) {
	clock := newFakeClock()
	if err := os.Remove(storeFixture); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	w, err := Open(Config{Path: storeFixture, alloc: allocNone}, knobs.WithNow(clock.Now), knobs.WithFileMode(0o644))
	if err != nil {
		t.Fatal(err)
	}
	runID := newRun(t, w, "fixture")
	stepID := testIDs.New(world.PrefixStep)
	mustAppend(t, w, runID, ev(stepID, &world.StepCreated{StepName: "s", Input: json.RawMessage(`[1]`)}),
		ev(stepID, &world.StepStarted{LeaseTTL: time.Minute}))
	mustAppend(t, w, runID, ev(stepID, &world.StepCompleted{Result: json.RawMessage(`2`)}),
		ev("", &world.RunCompleted{Output: json.RawMessage(`"done"`)}))
	if _, err := w.Enqueue(context.Background(), &world.EnqueueParams{Body: []byte("queued")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
