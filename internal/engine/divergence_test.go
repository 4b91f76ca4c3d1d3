package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// divergedRun returns the run after a divergence, checking that it is held
// (not failed) by REPLAY_DIVERGENCE.
func divergedRun(t *testing.T, h *harness, id string) *world.Run {
	t.Helper()
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != world.RunStatusHeld || run.Hold == nil || run.Hold.ErrorCode != world.CodeReplayDivergence || run.Hold.Error == nil {
		t.Fatalf("run %s %+v, want it held by REPLAY_DIVERGENCE", run.Status, run.Hold)
	}
	return run
}

// TestReplayComparesStepInputs: a step asked for at the same position with
// the same name but other arguments is a divergence, reported with both
// inputs' digests and the position, before anything runs; the same
// arguments, or a log written before digests were recorded, replay.
func TestReplayComparesStepInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		digest   bool // the log records input digests
		v2Input  int
		diverges bool
	}{
		{"same input", true, 1, false},
		{"other input", true, 2, true},
		{"log without digests", false, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Config{Linger: -1})
			var runs atomic.Int32
			h.reg.step("a", 0, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				return in, nil
			})
			wfCalling := func(input int) func(*Context, json.RawMessage) (json.RawMessage, error) {
				return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
					f := c.Step("a", mustJSON(input))
					c.Await(f.Done)
					w := c.Sleep(time.Hour)
					c.Await(w.Done)
					r, _ := f.Result()
					return r, nil
				}
			}
			h.reg.wf("w", wfCalling(1))
			ctx := context.Background()
			var id string
			if tc.digest {
				id = h.start("w", nil)
				if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
					t.Fatal(err)
				}
			} else {
				id = startOldLog(t, h)
				runs.Add(1)
			}
			if n := count(h.events(id), world.EventWaitCreated); n != 1 {
				t.Fatalf("%d wait_created", n)
			}
			before := len(h.events(id))
			h.reg.wf("w", wfCalling(tc.v2Input))
			if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
				t.Fatal(err)
			}
			if !tc.diverges {
				run, _ := h.lw.GetRun(ctx, &world.GetRunParams{RunID: id})
				if run.Status != world.RunStatusRunning || len(h.events(id)) != before {
					t.Fatalf("run %s %s with %d events, want it sleeping as before", run.Status, run.ErrorCode, len(h.events(id)))
				}
				return
			}
			run := divergedRun(t, h, id)
			msg := run.Hold.Error.Message
			for _, want := range []string{
				"at event 3", "operation 1", `step "a"`,
				"input digest " + runrules.DigestInput(mustJSON(1)), "input digest " + runrules.DigestInput(mustJSON(2)),
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("step ran %d times, want once (before the change)", n)
			}
		})
	}
}

// startOldLog writes the log v1 leaves, as an engine that recorded no
// input digests wrote it: step "a" called with 1 and completed, then a
// sleep of an hour.
func startOldLog(t *testing.T, h *harness) string {
	t.Helper()
	id := h.ids.New(world.PrefixRun)
	det := newDetSource(id)
	stepID, waitID := det.id(world.PrefixStep), det.id(world.PrefixWait)
	for _, evs := range [][]world.EventInput{
		{{Data: &world.RunCreated{WorkflowName: "w"}}},
		{{Data: &world.RunStarted{}}, {CorrelationID: stepID, Data: &world.StepCreated{StepName: "a", Input: mustJSON(1)}}, {CorrelationID: stepID, Data: &world.StepStarted{}}},
		{{CorrelationID: stepID, Data: &world.StepCompleted{Result: mustJSON(1)}}, {CorrelationID: waitID, Data: &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}}},
	} {
		if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: id, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// TestDivergenceShowsInputs: a step called with another encoding of its
// arguments (a field added to their type) is held with a message showing
// the recorded and the new input, quoted and clipped, and naming the usual
// causes.
func TestDivergenceShowsInputs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300) + "\n"
	for _, tc := range []struct {
		name     string
		v1, v2   any
		want     []string
		unwanted string
	}{
		{"field added", map[string]any{"id": 7}, map[string]any{"id": 7, "note": ""},
			[]string{`recorded input "{\"id\":7}"`, `new input "{\"id\":7,\"note\":\"\"}"`, "a field added", "ranging over a map"}, ""},
		{"long input", map[string]any{"s": long}, map[string]any{"s": long + "y"},
			[]string{`recorded input "{\"s\":\"xxx`, "... (310 bytes)", "... (311 bytes)"}, strings.Repeat("x", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Config{Linger: -1})
			h.reg.step("a", 0, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
			wfCalling := func(input any) func(*Context, json.RawMessage) (json.RawMessage, error) {
				return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
					f := c.Step("a", mustJSON(input))
					c.Await(f.Done)
					w := c.Sleep(time.Hour)
					c.Await(w.Done)
					return nil, nil
				}
			}
			h.reg.wf("w", wfCalling(tc.v1))
			ctx := context.Background()
			id := h.start("w", nil)
			if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
				t.Fatal(err)
			}
			h.reg.wf("w", wfCalling(tc.v2))
			if err := h.eng.Handle(ctx, world.Message{RunID: id}); err != nil {
				t.Fatal(err)
			}
			msg := divergedRun(t, h, id).Hold.Error.Message
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			if tc.unwanted != "" && strings.Contains(msg, tc.unwanted) {
				t.Errorf("the message is not clipped: %d bytes", len(msg))
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("the message holds a raw newline: %q", msg)
			}
		})
	}
}
