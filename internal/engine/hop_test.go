package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A run that ends while a long timer is pending (cancelled during a sleep,
// or completed through a hook that raced the sleep) stops receiving the
// timer's wake-up: the next hop reads the run, finds it finished and drops
// the message. At most one hop is sent after the end (one already on its
// way when the run ended).
func TestWakeUpOfFinishedRunStopsHopping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, h *harness, runID string)
		want world.RunStatus
	}{
		{"cancelled during a sleep", func(t *testing.T, h *harness, runID string) {
			if _, err := h.w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "test"}}}}); err != nil {
				t.Fatal(err)
			}
			if err := Wake(context.Background(), h.w, time.Now, runID, "cancel:"+runID); err != nil {
				t.Fatal(err)
			}
		}, world.RunStatusCancelled},
		{"completed through its hook", func(t *testing.T, h *harness, runID string) {
			if _, err := ResumeHook(context.Background(), h.w, time.Now, "approve-"+runID, mustJSON("yes")); err != nil {
				t.Fatal(err)
			}
		}, world.RunStatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{MaxQueueDelay: 50 * time.Millisecond})
			h.reg.wf("approve", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
				hk := c.Hook("approve-"+c.RunID(), nil, false)
				timeout := c.Sleep(time.Minute)
				c.Await(func() bool { return hk.Len() > 0 || timeout.Done() })
				if hk.Len() == 0 {
					return mustJSON("timed out"), nil
				}
				p, _ := hk.Payload(0)
				return p, nil
			})
			h.work(2, nil)
			id := h.start("approve", nil)
			// Let the timer's wake-up hop a few times, then end the run.
			waitFor(t, func() bool { return len(farWakeUps(mw.snapshot(), id)) >= 3 })
			ended := len(mw.snapshot())
			tc.end(t, h, id)
			if run := h.wait(id); run.Status != tc.want {
				t.Fatalf("run = %s, want %s", run.Status, tc.want)
			}
			time.Sleep(600 * time.Millisecond) // 12 hops without the check
			if got := farWakeUps(mw.snapshot()[ended:], id); len(got) > 1 {
				t.Errorf("%d wake-ups for the timer sent after the run ended, want at most 1: %+v", len(got), got)
			}
		})
	}
}

// A message for an unknown run with a far-future NotBefore is acknowledged
// and dropped at its first hop, not re-enqueued until then.
func TestWakeUpOfUnknownRunIsDropped(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{MaxQueueDelay: 50 * time.Millisecond})
	ctx := context.Background()
	for name, msg := range map[string]world.Message{
		"run":  {RunID: h.ids.New(world.PrefixRun), NotBefore: time.Now().Add(24 * time.Hour), Hop: 7},
		"step": {RunID: h.ids.New(world.PrefixRun), StepID: h.ids.New(world.PrefixStep), NotBefore: time.Now().Add(time.Hour)},
	} {
		if err := h.eng.Handle(ctx, msg); err != nil {
			t.Errorf("%s: %v, want the message acknowledged", name, err)
		}
	}
	if got := mw.snapshot(); len(got) != 0 {
		t.Errorf("enqueued %+v, want nothing", got)
	}
}

// farWakeUps returns the messages for run whose NotBefore is over 30s after
// they were first requested (the hops of a long timer).
func farWakeUps(msgs []world.Message, runID string) []world.Message {
	var out []world.Message
	for _, m := range msgs {
		if m.RunID == runID && m.NotBefore.Sub(m.RequestedAt) > 30*time.Second {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls cond for up to a minute (a bound for a busy machine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
