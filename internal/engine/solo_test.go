package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// slowStep runs until its context is cancelled or release is closed.
func slowStep(release <-chan struct{}) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return mustJSON("step"), nil
		}
	}
}

// A step alone in flight runs on the session's goroutine (runSolo); while it
// runs, a timer that comes due must still fire on time: the session moves to
// another goroutine and the run finishes while the step is still running.
func TestSoloStepDoesNotDelayATimer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	release := make(chan struct{})
	defer close(release)
	h.reg.step("slow", 0, slowStep(release))
	h.reg.wf("race", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("slow", nil)
		w := c.Sleep(50 * time.Millisecond)
		c.Await(func() bool { return f.Done() || w.Done() })
		if w.Done() {
			return mustJSON("timer"), nil
		}
		return mustJSON("step"), nil
	})
	h.work(1, nil)
	start := time.Now()
	run := h.wait(h.start("race", nil))
	if run.Status != world.RunStatusCompleted || string(run.Output) != `"timer"` {
		t.Fatalf("run = %s %s %+v", run.Status, run.Output, run.Error)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the timer fired after %v", d)
	}
}

// Hook payloads that arrive while a solo step runs are seen at the next
// event poll, not when the step ends; the run then ends, and the step's
// context is cancelled.
func TestSoloStepDoesNotDelayAHookPayload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{EventPollInterval: 20 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	h.reg.step("slow", 0, slowStep(release))
	h.reg.wf("hooked", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		hk := c.Hook("solo-hook", nil, false)
		c.Await(hk.Registered)
		f := c.Step("slow", nil)
		c.Await(func() bool { return f.Done() || hk.Len() > 0 })
		if hk.Len() > 0 {
			p, _ := hk.Payload(0)
			return p, nil
		}
		return mustJSON("step"), nil
	})
	h.work(2, nil)
	id := h.start("hooked", nil)
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := ResumeHook(ctx, h.w, time.Now, "solo-hook", mustJSON("payload")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook was never registered")
		}
		time.Sleep(2 * time.Millisecond)
	}
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != `"payload"` {
		t.Fatalf("run = %s %s %+v", run.Status, run.Output, run.Error)
	}
}

// A session whose solo step moved it to another goroutine several times
// (every step outlives the event poll) completes with one commit per serial
// step.
func TestSoloStepsMoveAndComplete(t *testing.T) {
	t.Parallel()
	var cw *countingWorld
	h := newHarness(t, func(lw *localworld.World) world.World { cw = &countingWorld{World: lw}; return cw },
		Config{EventPollInterval: 5 * time.Millisecond})
	h.reg.step("nap", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		time.Sleep(15 * time.Millisecond)
		return in, nil
	})
	h.reg.wf("naps", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		n := 0
		for i := range 5 {
			f := c.Step("nap", mustJSON(i))
			c.Await(f.Done)
			res, fail := f.Result()
			if fail != nil {
				return nil, &Failure{Data: fail}
			}
			var v int
			_ = json.Unmarshal(res, &v)
			n += v
		}
		return mustJSON(n), nil
	})
	id := h.start("naps", nil)
	before := cw.appends.Load() // read before any worker can append
	h.work(1, nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != "10" {
		t.Fatalf("run = %s %s %+v", run.Status, run.Output, run.Error)
	}
	if got := cw.appends.Load() - before; got != 6 {
		t.Errorf("appends = %d, want 6 (5 steps)", got)
	}
	if n := count(h.events(id), world.EventStepCompleted); n != 5 {
		t.Errorf("step_completed = %d, want 5", n)
	}
}

// A timer further off than Linger is scheduled as a continuation sent
// wakeLead early, which lingers: the workflow resumes at the timer's time,
// never before it, and not a queue round trip after it.
func TestTimerContinuationArrivesEarly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Linger: 50 * time.Millisecond})
	var resumed atomic.Int64
	h.reg.wf("sleeper", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		w := c.Sleep(120 * time.Millisecond)
		c.Await(w.Done)
		resumed.CompareAndSwap(0, time.Now().UnixNano())
		return mustJSON("ok"), nil
	})
	h.work(1, nil)
	id := h.start("sleeper", nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted {
		t.Fatalf("run = %s %+v", run.Status, run.Error)
	}
	var resumeAt time.Time
	for _, ev := range h.events(id) {
		if d, ok := ev.Data.(*world.WaitCreated); ok {
			resumeAt = d.ResumeAt
		}
	}
	late := time.Unix(0, resumed.Load()).Sub(resumeAt)
	if late < 0 {
		t.Errorf("the workflow resumed %v before its timer", -late)
	}
	if late > time.Second {
		t.Errorf("the workflow resumed %v after its timer", late)
	}
	t.Logf("resumed %v after the timer", late)
}
