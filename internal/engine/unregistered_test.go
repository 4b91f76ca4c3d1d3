package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

func (r *mapRegistry) unstep(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.steps, name)
}

// heldForStep checks that run id is held, not failed, for step name not
// being registered.
func heldForStep(t *testing.T, h *harness, id, name string) *world.Run {
	t.Helper()
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != world.RunStatusHeld || run.Hold == nil || run.Hold.ErrorCode != world.CodeDeploymentMismatch || run.Hold.Error == nil ||
		run.Hold.Error.Type != TypeStepNotRegistered || !strings.Contains(run.Hold.Error.Message, `step "`+name+`" is not registered`) {
		t.Fatalf("run %s %+v, want it held by DEPLOYMENT_MISMATCH for step %q", run.Status, run.Hold, name)
	}
	return run
}

// TestUnregisteredStepHoldsTheRun: a run whose code calls a step the
// deployment forgot to register is held, as a divergence is, before the
// step is created; it runs on once a deploy registers the step.
func TestUnregisteredStepHoldsTheRun(t *testing.T) {
	t.Parallel()
	h := &holdHarness{harness: newHarness(t, nil, Config{Linger: -1, Options: Options{HoldRetryDelay: time.Minute, HoldRetryLimit: time.Hour}})}
	h.reg.step("a", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.wf("w", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for _, name := range []string{"a", "b"} {
			f := c.Step(name, nil)
			c.Await(f.Done)
		}
		return mustJSON("done"), nil
	})
	h.id = h.start("w", nil)
	h.handle(world.Message{RunID: h.id})
	heldForStep(t, h.harness, h.id, "b")
	evs := h.events(h.id)
	if count(evs, world.EventStepCreated) != 1 || count(evs, world.EventStepFailed) != 0 || count(evs, world.EventRunFailed) != 0 {
		t.Fatalf("log %v: want step a only, nothing failed", types(evs))
	}

	// The retry with the same code holds it again.
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	if got := heldForStep(t, h.harness, h.id, "b").Hold; got.Attempt != 2 {
		t.Fatalf("hold after a retry %+v, want attempt 2", got)
	}
	h.drain()

	// The fixed deploy: the retry releases the run, which completes.
	h.reg.step("b", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		h.ranB.Add(1)
		return mustJSON(2), nil
	})
	h.handle(world.Message{RunID: h.id, HoldAttempt: 2})
	if run := h.run(); run.Status != world.RunStatusCompleted || h.ranB.Load() != 1 {
		t.Fatalf("after the fix: run %s (%+v), step b ran %d times", run.Status, run.Error, h.ranB.Load())
	}
}

// TestUnregisteredQueuedStepHoldsTheRun: a background executor whose
// deployment does not register a step queued by an earlier one does not
// fail it: it wakes the run, which is held; the fixed deploy runs it. The
// step is queued alone, or in a group with a registered one that runs.
func TestUnregisteredQueuedStepHoldsTheRun(t *testing.T) {
	t.Parallel()
	for _, queued := range [][]string{{"b"}, {"b", "c"}} {
		t.Run(strings.Join(queued, "+"), func(t *testing.T) {
			t.Parallel()
			testUnregisteredQueued(t, queued)
		})
	}
}

func testUnregisteredQueued(t *testing.T, queued []string) {
	// As many steps run inline as are queued, in one message.
	h := &holdHarness{harness: newHarness(t, nil, Config{Linger: -1, Options: Options{InlineConcurrency: len(queued), HoldRetryDelay: time.Minute, HoldRetryLimit: time.Hour}})}
	var ranB atomic.Int32
	stepB := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ranB.Add(1)
		return mustJSON(2), nil
	}
	names := append([]string{"a", "d"}[:len(queued)], queued...)
	for _, name := range names {
		h.reg.step(name, 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	}
	h.reg.step("b", 0, stepB)
	h.reg.wf("w", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		var fs []*Future
		for _, name := range names {
			fs = append(fs, c.Step(name, nil))
		}
		for _, f := range fs {
			c.Await(f.Done)
		}
		return mustJSON("done"), nil
	})
	h.id = h.start("w", nil)
	h.handle(world.Message{RunID: h.id}) // runs a (and d) inline, queues the others
	var stepMsg *world.Message
	for _, m := range h.drain() {
		if len(runrules.Steps(m)) == len(queued) {
			stepMsg = &m
		}
	}
	if stepMsg == nil {
		t.Fatalf("steps %q were not queued in one message", queued)
	}
	h.reg.unstep("b") // the bad deploy
	h.handle(*stepMsg)
	heldForStep(t, h.harness, h.id, "b")
	if evs := h.events(h.id); count(evs, world.EventStepFailed) != 0 || count(evs, world.EventStepCompleted) != len(names)-1 || ranB.Load() != 0 {
		t.Fatalf("log %v, step b ran %d times: want the others completed, nothing failed", types(evs), ranB.Load())
	}
	h.drain()
	h.reg.step("b", 0, stepB)
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	if run := h.run(); run.Status != world.RunStatusCompleted || ranB.Load() != 1 {
		t.Fatalf("after the fix: run %s (%+v), step b ran %d times", run.Status, run.Error, ranB.Load())
	}
}

func types(evs []world.Event) []world.EventType {
	out := make([]world.EventType, len(evs))
	for i := range evs {
		out[i] = evs[i].Type()
	}
	return out
}

// logMessages records the messages of the log records it handles.
type logMessages struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logMessages) Enabled(context.Context, slog.Level) bool { return true }
func (l *logMessages) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logMessages) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logMessages) WithGroup(string) slog.Handler      { return l }

func (l *logMessages) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// TestReleasedRunStartsOnce: a held run released by a fixed deploy logs
// "run released", not "run started" a second time, and counts one start.
func TestReleasedRunStartsOnce(t *testing.T) {
	t.Parallel()
	l := &logMessages{}
	m := &countMetrics{}
	h := &holdHarness{harness: newHarness(t, nil, Config{Linger: -1,
		Logger: slog.New(l), Options: Options{HoldRetryDelay: time.Minute, HoldRetryLimit: time.Hour, Metrics: m}})}
	h.reg.step("a", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.wf("w", sleeperCalling("a"))
	h.id = h.start("w", nil)
	h.handle(world.Message{RunID: h.id})
	h.reg.wf("w", sleeperCalling("b")) // the bad deploy
	h.handle(world.Message{RunID: h.id})
	divergedRun(t, h.harness, h.id)
	h.reg.wf("w", sleeperCalling("a")) // the fix
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	if run := h.run(); run.Status != world.RunStatusRunning {
		t.Fatalf("run %s, want it released", run.Status)
	}
	if s, r := l.count("run started"), l.count("run released"); s != 1 || r != 1 {
		t.Errorf(`logged "run started" %d times and "run released" %d times, want once each`, s, r)
	}
	if n := m.get(MetricRunsStarted); n != 1 {
		t.Errorf("%s = %d, want 1", MetricRunsStarted, n)
	}
}
