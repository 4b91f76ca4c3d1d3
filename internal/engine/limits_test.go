package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// testLimits are small, for the tests to reach them.
var testLimits = world.Limits{MaxEvents: 60, MaxPayload: 1 << 10, MaxHooks: 5, MaxWaits: 5}

// newLimitedHarness is newHarness on a World configured with lim.
func newLimitedHarness(t *testing.T, lim world.Limits) *harness {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	h := &harness{t: t, lw: lw, w: lw, reg: newRegistry(), ids: world.NewIDSource(nil, nil)}
	h.eng, err = New(Config{World: lw, Registry: h.reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.eng.Close)
	return h
}

// wantFailedOver checks that run failed with code, its error typed as a
// limit's, and that its log stays within the events limit (plus its end).
func (h *harness) wantFailedOver(run *world.Run, code string) {
	h.t.Helper()
	if run.Status != world.RunStatusFailed || run.ErrorCode != code || run.Error == nil || run.Error.Type != TypeLimitExceeded {
		h.t.Fatalf("run %s %s code %q error %+v, want failed with %s (%s)", run.RunID, run.Status, run.ErrorCode, run.Error, code, TypeLimitExceeded)
	}
	if run.LastSeq > testLimits.MaxEvents+2 {
		h.t.Fatalf("run has %d events, limit %d", run.LastSeq, testLimits.MaxEvents)
	}
}

func bigJSON(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n) + `"`) }

// A step whose result passes the payload limit fails, typed, without its
// result reaching the log: the workflow sees the failure and may handle it.
func TestLimitStepResult(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.step("big", 3, func(context.Context, json.RawMessage) (json.RawMessage, error) { return bigJSON(2 << 10), nil })
	h.reg.wf("wf", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("big", nil)
		c.Await(f.Done)
		_, fail := f.Result()
		if fail == nil {
			return mustJSON("no error"), nil
		}
		return mustJSON(fail.Code), nil
	})
	h.work(1, nil)
	id := h.start("wf", nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != `"`+world.CodeLimitExceeded+`"` {
		t.Fatalf("run %s output %s error %+v, want completed with the step's code %s", run.Status, run.Output, run.Error, world.CodeLimitExceeded)
	}
	evs := h.events(id)
	if n := count(evs, world.EventStepCompleted); n != 0 {
		t.Fatalf("%d step_completed recorded", n)
	}
	if n := count(evs, world.EventStepStarted); n != 1 {
		t.Fatalf("%d attempts, want 1: the failure is fatal", n)
	}
}

// A step's error larger than the payload limit is recorded cut, and the
// step fails as it would have.
func TestLimitStepError(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.step("loud", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New(strings.Repeat("e", 4<<10))
	})
	h.reg.wf("wf", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("loud", nil)
		c.Await(f.Done)
		_, fail := f.Result()
		return nil, &Failure{Data: fail}
	})
	h.work(1, nil)
	run := h.wait(h.start("wf", nil))
	if run.Status != world.RunStatusFailed || run.Error == nil || !strings.HasPrefix(run.Error.Message, "eeee") || len(run.Error.Message) > testLimits.MaxPayload {
		t.Fatalf("run %s error %+v, want failed with the step's error cut to %d bytes", run.Status, run.Error, testLimits.MaxPayload)
	}
}

// A run's output larger than the payload limit fails the run, typed.
func TestLimitRunOutput(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.wf("wf", func(*Context, json.RawMessage) (json.RawMessage, error) { return bigJSON(2 << 10), nil })
	h.work(1, nil)
	h.wantFailedOver(h.wait(h.start("wf", nil)), world.CodeLimitExceeded)
}

// A run that never ends fails with MAX_EVENTS_EXCEEDED once its log is
// full, instead of growing until the process dies.
func TestLimitEvents(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.step("add", 0, addStep)
	h.reg.wf("forever", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for i := 0; ; i++ {
			f := c.Step("add", mustJSON([2]int{i, 1}))
			c.Await(f.Done)
		}
	})
	h.work(1, nil)
	run := h.wait(h.start("forever", nil))
	h.wantFailedOver(run, world.CodeMaxEventsExceeded)
	// How a step's events group into commits varies with timing (its
	// completion commits with the next step's creation and start, or alone
	// when it lands after the session's turn), so the run stops within one
	// step's commit (3 events) of its limit, not at an exact count.
	if run.LastSeq < testLimits.MaxEvents-3 {
		t.Fatalf("run failed at %d events, more than one step's commit before its limit of %d", run.LastSeq, testLimits.MaxEvents)
	}
}

// More hooks than a run may create fail it before any of them is
// committed past the limit.
func TestLimitHooks(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.wf("hooks", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for range testLimits.MaxHooks + 1 {
			c.Hook(c.NewToken(), nil, false)
		}
		c.Await(func() bool { return false })
		return nil, nil
	})
	h.work(1, nil)
	id := h.start("hooks", nil)
	h.wantFailedOver(h.wait(id), world.CodeLimitExceeded)
	if n := count(h.events(id), world.EventHookCreated); n != 0 {
		t.Fatalf("%d hooks created", n)
	}
}

// More sleeps than a run may create fail it.
func TestLimitWaits(t *testing.T) {
	t.Parallel()
	h := newLimitedHarness(t, testLimits)
	h.reg.wf("waits", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for range testLimits.MaxWaits + 1 {
			f := c.Sleep(time.Millisecond)
			c.Await(f.Done)
		}
		return nil, nil
	})
	h.work(1, nil)
	id := h.start("waits", nil)
	h.wantFailedOver(h.wait(id), world.CodeLimitExceeded)
	if n := count(h.events(id), world.EventWaitCreated); n != testLimits.MaxWaits {
		t.Fatalf("%d waits created, want the %d allowed", n, testLimits.MaxWaits)
	}
}

// A run whose step results fill its MaxRunBytes fails with LIMIT_EXCEEDED
// (the step_completed that would pass it is refused), instead of retrying
// the commit.
func TestLimitRunBytes(t *testing.T) {
	t.Parallel()
	lim := testLimits
	lim.MaxRunBytes = 4 << 10
	h := newLimitedHarness(t, lim)
	h.reg.step("mid", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return bigJSON(900), nil })
	h.reg.wf("wf", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		for range 10 {
			f := c.Step("mid", nil)
			c.Await(f.Done)
			if _, fail := f.Result(); fail != nil {
				return nil, &Failure{Data: fail}
			}
		}
		return mustJSON("done"), nil
	})
	h.work(1, nil)
	run := h.wait(h.start("wf", nil))
	// Only its end (run_failed, an error within MaxPayload) passes the bound.
	if run.Status != world.RunStatusFailed || run.ErrorCode != world.CodeLimitExceeded || run.PayloadBytes > lim.MaxRunBytes+int64(lim.MaxPayload) {
		t.Fatalf("run %s code %q error %+v bytes %d, want failed with %s within %d bytes and its end", run.Status, run.ErrorCode, run.Error, run.PayloadBytes, world.CodeLimitExceeded, lim.MaxRunBytes)
	}
}
