package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// recordElsewhere appends step name's start and completion to run, as a
// background executor does, outside the session's fence.
func recordElsewhere(ctx context.Context, w world.World, run, name string, result json.RawMessage) error {
	page, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
	if err != nil {
		return err
	}
	for _, ev := range page.Items {
		if d, ok := ev.Data.(*world.StepCreated); ok && d.StepName == name {
			_, err := w.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{
				{CorrelationID: ev.CorrelationID, Data: &world.StepStarted{StepName: name, LeaseTTL: time.Minute, Queued: true}},
				{CorrelationID: ev.CorrelationID, Data: &world.StepCompleted{StepName: name, Result: result}},
			}})
			return err
		}
	}
	return fmt.Errorf("no step %q in run %s", name, run)
}

// TestRefusedCommitAbsorbsOtherSteps: a session whose commit of a step's
// result is refused because another writer recorded other steps meanwhile
// (a wide fan-out's background executors) feeds those to the workflow
// instead of rebuilding it (the workflow function runs once; it ran again
// at every refusal, the whole fan-out each time), and the settlement order
// is the log's: step b, recorded by the other writer while a ran, settled
// first, though the session delivered a's result to the workflow before it
// read b's.
func TestRefusedCommitAbsorbsOtherSteps(t *testing.T) {
	t.Parallel()
	rec := &recorder{msgs: map[string]int{}}
	var entries atomic.Int64
	// One inline slot: a runs inline, b and c are queued; the one consumer
	// runs the session first, so b and c wait for it. No event poll while
	// a runs: the session learns of b only from the refused commit.
	h := newHarness(t, nil, Config{Logger: slog.New(rec), Options: Options{InlineConcurrency: 1}, EventPollInterval: time.Hour})
	h.reg.step("a", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var run string
		_ = json.Unmarshal(in, &run)
		return mustJSON("a"), recordElsewhere(ctx, h.w, run, "b", mustJSON("b"))
	})
	h.reg.step("b", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		return mustJSON("b again"), nil
	})
	h.reg.step("c", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("c"), nil })
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		entries.Add(1)
		a := c.Step("a", mustJSON(c.RunID()))
		b := c.Step("b", nil)
		cc := c.Step("c", nil)
		awaitAll(c, a, b, cc)
		first, _ := b.Result()
		if a.Order() < b.Order() {
			first, _ = a.Result()
		}
		return first, nil
	})
	h.work(1, nil)
	id := h.start("w", nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != `"b"` {
		t.Fatalf("run %s, output %s, %+v: want b, settled first in the log", run.Status, run.Output, run.Error)
	}
	if n := rec.count("engine: commit refused; fed"); n < 1 {
		t.Fatalf("%d refused commits absorbed, want at least 1", n)
	}
	if n := rec.count("engine: commit refused; rebuilding"); n != 0 {
		t.Errorf("%d rebuilds, want none", n)
	}
	if n := entries.Load(); n != 1 {
		t.Errorf("workflow function called %d times, want once", n)
	}
	sameAsReplay(t, h, id)
}

// sameAsReplay replays run id's log with CheckLog: the output the session
// committed is the replay's.
func sameAsReplay(t *testing.T, h *harness, id string) {
	t.Helper()
	res, err := CheckLog(h.reg, h.events(id))
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence != nil {
		t.Fatalf("replay diverges: %s", res.Divergence.Message)
	}
	if run := h.wait(id); string(res.Output) != string(run.Output) {
		t.Fatalf("replay returns %s, the run %s", res.Output, run.Output)
	}
}

// TestWideFanOutLooksAtItsStepsLinearly: a session running a wide fan-out
// 16 steps at a time looked at every open step at every turn, to find one
// whose name is not registered (missingStep) and the next to start
// (build), sorting them all each time: O(n²) over the fan-out. Counted,
// not timed: the registry lookups per step.
func TestWideFanOutLooksAtItsStepsLinearly(t *testing.T) {
	t.Parallel()
	const n = 1000
	// The excess held back for an hour: the session runs them all.
	h := newHarness(t, nil, Config{BackgroundDelay: time.Hour})
	h.reg.step("s", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		fs := make([]*Future, n)
		for i := range fs {
			fs[i] = c.Step("s", mustJSON(i))
		}
		awaitAll(c, fs...)
		return mustJSON(n), nil
	})
	h.work(1, nil)
	id := h.start("w", nil)
	if run := h.wait(id); run.Status != world.RunStatusCompleted {
		t.Fatalf("run %s %+v", run.Status, run.Error)
	}
	per := float64(h.reg.stepLookups.Load()) / n
	t.Logf("%d registry lookups for %d steps: %.1f per step", h.reg.stepLookups.Load(), n, per)
	if per > 10 {
		t.Errorf("%.1f registry lookups per step, want at most 10 (linear)", per)
	}
}
