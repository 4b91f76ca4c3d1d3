package skeintest_test

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// The fixture: an order workflow whose v1 reserves stock, waits for an
// approval hook, sleeps, and ships; the variants change it the ways a user
// would, with or without a patch.

type histOrder struct {
	ID    string        `json:"id"`
	Lines []string      `json:"lines,omitempty"`
	Wait  time.Duration `json:"wait"`
}

type histApproval struct {
	OK bool `json:"ok"`
}

// histCalls counts the executions of the fixture's steps, so that a test
// can assert that checking a history runs none.
type histCalls struct{ n atomic.Int64 }

func (c *histCalls) step(name string) *workflow.Step[string, string] {
	return workflow.NewStep(name, func(_ context.Context, in string) (string, error) {
		c.n.Add(1)
		return name + ":" + in, nil
	})
}

// histVariant describes a version of the order workflow.
type histVariant struct {
	fraud         string // "": no fraud check; "plain": added without a patch; "patched": under a patch
	dropReserve   string // "": keeps reserve; "plain": removed without a patch; "patched": removed under a patch
	otherInput    bool   // reserve is called with another input
	stepAfterHook bool   // a step added after the hook without a patch
	reverseLines  bool   // pack fans its lines out in reverse order
	panics        bool   // order panics after reserving
}

// registry returns a registry holding the variant of "order", the fan-out
// workflow "pack", and their steps, counted by calls.
func (v histVariant) registry(calls *histCalls) *workflow.Registry {
	reserve, ship, fraud, audit, line := calls.step("reserve"), calls.step("ship"), calls.step("fraud-check"),
		calls.step("audit"), calls.step("reserve-line")
	wf := workflow.New("order", func(ctx workflow.Context, o histOrder) (string, error) {
		if v.fraud == "plain" || (v.fraud == "patched" && workflow.Patched(ctx, "add-fraud-check")) {
			if _, err := fraud.Call(ctx, o.ID); err != nil {
				return "", err
			}
		}
		keep := v.dropReserve == "" || (v.dropReserve == "patched" && !workflow.Patched(ctx, "drop-reserve"))
		if keep {
			in := o.ID
			if v.otherInput {
				in = "#" + o.ID
			}
			if _, err := reserve.Call(ctx, in); err != nil {
				return "", err
			}
		}
		if v.panics {
			panic("out of paper")
		}
		h := workflow.NewHook[histApproval](ctx, workflow.HookOptions{Token: "approve/" + o.ID})
		a, err := h.Receive(ctx)
		if err != nil {
			return "", err
		}
		if !a.OK {
			return "refused", nil
		}
		if v.stepAfterHook {
			if _, err := audit.Call(ctx, o.ID); err != nil {
				return "", err
			}
		}
		if err := workflow.Sleep(ctx, o.Wait); err != nil {
			return "", err
		}
		return ship.Call(ctx, o.ID)
	})
	pack := workflow.New("pack", func(ctx workflow.Context, o histOrder) ([]string, error) {
		fs := make([]workflow.Future[string], len(o.Lines))
		for i := range o.Lines {
			l := o.Lines[i]
			if v.reverseLines {
				l = o.Lines[len(o.Lines)-1-i]
			}
			fs[i] = line.Go(ctx, l)
		}
		out, err := workflow.All(ctx, fs...)
		if err != nil {
			return nil, err
		}
		return out, workflow.Sleep(ctx, o.Wait)
	})
	return workflow.NewRegistry().MustRegister(wf, pack, reserve, ship, fraud, audit, line)
}

// histRecorder runs a version of the fixture (v1 unless deploy changes it) on
// an in-memory local world with a worker, to record real histories.
type histRecorder struct {
	t      *testing.T
	w      *localworld.World
	client *client.Client
	stop   func()
}

func newHistRecorder(t *testing.T) *histRecorder {
	t.Helper()
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := &histRecorder{t: t, w: w, stop: func() {}}
	t.Cleanup(func() { r.stop(); _ = w.Close() })
	r.deploy(histVariant{})
	return r
}

// deploy stops the worker and starts one running the variant v.
func (r *histRecorder) deploy(v histVariant) {
	r.t.Helper()
	r.stop()
	worker, err := worker.New(worker.Config{World: r.w, Registry: v.registry(&histCalls{})}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	r.client, r.stop = worker.Client(), func() { cancel(); <-done }
}

// start starts a run of workflow name.
func (r *histRecorder) start(name string, o histOrder) string {
	r.t.Helper()
	id, err := r.client.Start(context.Background(), name, o)
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

// until waits until the run's log has an event of type typ (the n-th one
// of that type, counting from 1), and returns the log.
func (r *histRecorder) until(runID string, typ world.EventType, n int) []world.Event {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := skeintest.ReadLog(context.Background(), r.w, runID)
		if err != nil {
			r.t.Fatal(err)
		}
		seen := 0
		for _, ev := range events {
			if ev.Type() == typ {
				seen++
			}
		}
		if seen >= n {
			return events
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("run %s: no %s (#%d) within 10s; log: %d events", runID, typ, n, len(events))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// approve resumes the run's approval hook.
func (r *histRecorder) approve(id string) {
	r.t.Helper()
	if _, err := r.client.ResumeHook(context.Background(), "approve/"+id, histApproval{OK: true}); err != nil {
		r.t.Fatal(err)
	}
}

// recordHistories records the fixture's histories with v1: an order suspended
// at its hook, one asleep, one completed, and a fan-out asleep.
type recordedHistories struct {
	atHook, asleep, completed, fanout []world.Event
}

func recordHistories(t *testing.T) recordedHistories {
	t.Helper()
	return recordHistoriesOn(newHistRecorder(t))
}

func recordHistoriesOn(r *histRecorder) recordedHistories {
	r.t.Helper()
	var h recordedHistories
	hookRun := r.start("order", histOrder{ID: "1", Wait: time.Hour})
	sleepRun := r.start("order", histOrder{ID: "2", Wait: time.Hour})
	doneRun := r.start("order", histOrder{ID: "3"})
	fanRun := r.start("pack", histOrder{ID: "4", Lines: []string{"a", "b", "c", "d", "e"}, Wait: time.Hour})
	h.atHook = r.until(hookRun, world.EventHookCreated, 1)
	r.until(sleepRun, world.EventHookCreated, 1)
	r.approve("2")
	h.asleep = r.until(sleepRun, world.EventWaitCreated, 1)
	r.until(doneRun, world.EventHookCreated, 1)
	r.approve("3")
	h.completed = r.until(doneRun, world.EventRunCompleted, 1)
	h.fanout = r.until(fanRun, world.EventWaitCreated, 1)
	return h
}

// logPrefix returns the log up to and including the first event of type typ.
func logPrefix(t *testing.T, events []world.Event, typ world.EventType) []world.Event {
	t.Helper()
	for i, ev := range events {
		if ev.Type() == typ {
			return events[:i+1]
		}
	}
	t.Fatalf("no %s in the log", typ)
	return nil
}

func describeLog(events []world.Event) string {
	var s string
	for _, ev := range events {
		s += fmt.Sprintf("\n  %d %s %s", ev.Seq, ev.Type(), ev.CorrelationID)
	}
	return s
}

func mustCheckLog(t *testing.T, reg *workflow.Registry, events []world.Event) *sdk.ReplayReport {
	t.Helper()
	rep, err := sdk.CheckLog(reg, events)
	if err != nil {
		t.Fatalf("CheckLog: %v%s", err, describeLog(events))
	}
	return rep
}
