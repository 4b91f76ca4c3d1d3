package localworld

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// mode is one way to open a World; most tests run on every mode.
type mode struct {
	name    string
	durable bool
	// spillWindow: Config.spillWindow (0: the default).
	spillWindow int64
	sync        SyncPolicy
}

var modes = []mode{
	{name: "memory"},
	{name: "log-every-commit", durable: true, sync: SyncEveryCommit},
	// Values go to disk right after their commit (spill.go).
	{name: "log-batch", durable: true, sync: SyncBatch, spillWindow: 1},
	{name: "log-none", durable: true, sync: SyncNone},
}

// forModes runs fn as a parallel subtest per mode.
func forModes(t *testing.T, fn func(t *testing.T, m mode)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			fn(t, m)
		})
	}
}

// config returns the Config of mode m in a fresh directory.
func (m mode) config(t *testing.T) Config {
	t.Helper()
	c := Config{Sync: m.sync, LockTimeout: 200 * time.Millisecond, spillWindow: m.spillWindow}
	if m.durable {
		c.Path = filepath.Join(t.TempDir(), "world.db")
	}
	return c
}

// mustOpen opens cfg and closes the World when the test ends.
func mustOpen(t *testing.T, cfg Config, opts ...knobs.Option) *World {
	t.Helper()
	w, err := Open(cfg, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var testIDs = world.NewIDSource(nil, nil)

func ev(corr string, d world.EventData) world.EventInput {
	return world.EventInput{CorrelationID: corr, Data: d}
}

func mustAppend(t *testing.T, w *World, runID string, evs ...world.EventInput) *world.AppendResult {
	t.Helper()
	res, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs})
	if err != nil {
		t.Fatalf("Append(%s): %v", runID, err)
	}
	return res
}

// newRun creates and starts a run of workflow wf.
func newRun(t *testing.T, w *World, wf string) string {
	t.Helper()
	id := testIDs.New(world.PrefixRun)
	mustAppend(t, w, id,
		ev("", &world.RunCreated{WorkflowName: wf, Input: json.RawMessage(`{}`)}),
		ev("", &world.RunStarted{}))
	return id
}

func wantErrIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func allEvents(t *testing.T, w *World, runID string) []world.Event {
	t.Helper()
	var out []world.Event
	cursor := ""
	for {
		p, err := w.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 7, Cursor: cursor}})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		out = append(out, p.Items...)
		if len(p.Items) > 0 && p.Cursor == "" {
			t.Fatal("ListEvents: non-empty page without a cursor")
		}
		if !p.HasMore {
			return out
		}
		cursor = p.Cursor
	}
}
