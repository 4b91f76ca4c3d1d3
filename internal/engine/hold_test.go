package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// holdHarness is a run of workflow "w" that ran step "a" and sleeps for an
// hour, then replayed by code asking for step "b" instead: held.
type holdHarness struct {
	*harness
	id   string
	ranB atomic.Int32
}

func sleeperCalling(step string) func(*Context, json.RawMessage) (json.RawMessage, error) {
	return func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step(step, nil)
		c.Await(f.Done)
		w := c.Sleep(time.Hour)
		c.Await(w.Done)
		return mustJSON("done"), nil
	}
}

func newHoldHarness(t *testing.T) *holdHarness {
	t.Helper()
	h := &holdHarness{harness: newHarness(t, nil, Config{Linger: -1, Options: Options{HoldRetryDelay: 40 * time.Millisecond, HoldRetryLimit: 60 * time.Millisecond}})}
	h.reg.step("a", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.step("b", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		h.ranB.Add(1)
		return mustJSON(2), nil
	})
	h.reg.wf("w", sleeperCalling("a"))
	h.id = h.start("w", nil)
	h.handle(world.Message{RunID: h.id})
	h.drain()
	h.reg.wf("w", sleeperCalling("b")) // the bad deploy
	return h
}

func (h *holdHarness) handle(m world.Message) {
	h.t.Helper()
	if err := h.eng.Handle(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
}

// drain receives and acknowledges every queued message, returning them.
func (h *holdHarness) drain() []world.Message {
	h.t.Helper()
	var out []world.Message
	for {
		ds, err := h.lw.Receive(context.Background(), &world.ReceiveParams{Max: 10, Wait: 120 * time.Millisecond, Visibility: time.Minute})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(ds) == 0 {
			return out
		}
		for _, d := range ds {
			m, err := world.DecodeMessage(d.Body)
			if err != nil {
				h.t.Fatal(err)
			}
			out = append(out, m)
			_ = h.lw.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt})
		}
	}
}

func (h *holdHarness) run() *world.Run {
	h.t.Helper()
	r, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: h.id})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// wantRetry checks that exactly one retry of hold attempt is queued, at the
// hold's retry time.
func (h *holdHarness) wantRetry(msgs []world.Message, attempt int, at time.Time) {
	h.t.Helper()
	n := 0
	for _, m := range msgs {
		if m.HoldAttempt == 0 {
			continue
		}
		n++
		if m.HoldAttempt != attempt || !m.NotBefore.Equal(at) {
			h.t.Errorf("retry message %+v, want attempt %d at %v", m, attempt, at)
		}
	}
	if n != 1 {
		h.t.Errorf("%d retry messages, want 1", n)
	}
}

// TestDivergenceHoldsTheRun: a run whose code changed incompatibly while it
// slept is held, not failed: nothing of the new code runs, its retries back
// off, replays that find the same divergence add nothing to the log, and
// deploying the old code again resumes it where it stopped.
func TestDivergenceHoldsTheRun(t *testing.T) {
	t.Parallel()
	h := newHoldHarness(t)
	before := h.events(h.id)
	began := time.Now()
	h.handle(world.Message{RunID: h.id})
	run := divergedRun(t, h.harness, h.id)
	hold := run.Hold
	if hold.Attempt != 1 || hold.RetryAt.Before(began.Add(40*time.Millisecond)) || hold.RetryAt.After(time.Now().Add(40*time.Millisecond)) {
		t.Fatalf("hold %+v, want attempt 1 retried in 40ms", hold)
	}
	evs := h.events(h.id)
	if len(evs) != len(before)+1 || evs[len(evs)-1].Type() != world.EventRunHeld || h.ranB.Load() != 0 {
		t.Fatalf("log grew from %d to %d events (last %s), step b ran %d times; want just run_held", len(before), len(evs), evs[len(evs)-1].Type(), h.ranB.Load())
	}
	h.wantRetry(h.drain(), 1, hold.RetryAt)

	// Another wake-up (an old timer, a hook payload) finds the same
	// divergence: nothing is appended, the retry is scheduled again (the
	// queue drops it as a duplicate or it finds the attempt done).
	h.handle(world.Message{RunID: h.id})
	if n := len(h.events(h.id)); n != len(evs) {
		t.Fatalf("a replay that found the same divergence appended %d events", n-len(evs))
	}
	h.drain()

	// The retry itself holds the run again, with a longer wait (capped).
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	second := h.run().Hold
	// 40ms doubled, capped at 60ms, from a little before the event.
	wait := second.RetryAt.Sub(h.events(h.id)[len(evs)].CreatedAt)
	if second.Attempt != 2 || !second.Since.Equal(hold.Since) || wait <= 40*time.Millisecond || wait > 60*time.Millisecond {
		t.Fatalf("hold after a retry %+v (retried after %s), want attempt 2, the same Since, retried after 60ms", second, wait)
	}
	h.wantRetry(h.drain(), 2, second.RetryAt)
	// A late retry of attempt 1 is a plain continuation.
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	if h.run().Hold.Attempt != 2 {
		t.Fatalf("a stale retry moved the hold to attempt %d", h.run().Hold.Attempt)
	}
	h.drain()

	// Compatible code again: the retry resumes the run, which sleeps on.
	h.reg.wf("w", sleeperCalling("a"))
	h.handle(world.Message{RunID: h.id, HoldAttempt: 2})
	run = h.run()
	if run.Status != world.RunStatusRunning || run.Hold != nil {
		t.Fatalf("after a compatible deploy: run %s hold %+v, want running", run.Status, run.Hold)
	}
	evs = h.events(h.id)
	if last := evs[len(evs)-1]; last.Type() != world.EventRunStarted {
		t.Fatalf("after a compatible deploy the log ends with %s, want run_started", last.Type())
	}
	if count(evs, world.EventStepCreated) != 1 || count(evs, world.EventWaitCreated) != 1 || h.ranB.Load() != 0 {
		t.Fatalf("the resumed run created %d steps and %d waits; want the old ones only", count(evs, world.EventStepCreated), count(evs, world.EventWaitCreated))
	}
}

// TestHeldRunEnds: a held run can be retried on request, failed or
// cancelled; a finished run can be neither retried nor failed.
func TestHeldRunEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		end  func(h *holdHarness) error
		want world.RunStatus
	}{
		{"fail", func(h *holdHarness) error { return FailRun(ctx, h.w, nil, time.Now, h.id, "", "bad deploy", nil) }, world.RunStatusFailed},
		{"cancel", func(h *holdHarness) error {
			_, err := h.w.Append(ctx, &world.AppendParams{RunID: h.id, Events: []world.EventInput{{Data: &world.RunCancelled{Reason: "r"}}}})
			return err
		}, world.RunStatusCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHoldHarness(t)
			h.handle(world.Message{RunID: h.id})
			divergedRun(t, h.harness, h.id)
			h.drain()
			if _, err := RetryHeldRun(ctx, h.w, time.Now, h.id); err != nil {
				t.Fatal(err)
			}
			msgs := h.drain()
			if len(msgs) != 1 || msgs[0].HoldAttempt != 1 || !msgs[0].NotBefore.IsZero() {
				t.Fatalf("RetryHeldRun queued %+v, want one retry of attempt 1 now", msgs)
			}
			if err := tc.end(h); err != nil {
				t.Fatal(err)
			}
			run := h.run()
			if run.Status != tc.want || run.Hold != nil {
				t.Fatalf("run %s hold %+v, want %s", run.Status, run.Hold, tc.want)
			}
			if tc.want == world.RunStatusFailed {
				if run.ErrorCode != world.CodeReplayDivergence || run.Error.Message != "failed on request: bad deploy" || run.Error.Cause == nil {
					t.Fatalf("failed run: %s %+v, want REPLAY_DIVERGENCE with the divergence as cause", run.ErrorCode, run.Error)
				}
			}
			h.handle(world.Message{RunID: h.id, HoldAttempt: 1}) // the retry finds it finished
			if _, err := RetryHeldRun(ctx, h.w, time.Now, h.id); !errors.Is(err, world.ErrConflict) {
				t.Errorf("RetryHeldRun on a finished run: %v, want ErrConflict", err)
			}
			if err := FailRun(ctx, h.w, nil, time.Now, h.id, "", "", nil); !errors.Is(err, world.ErrConflict) {
				t.Errorf("FailRun on a finished run: %v, want ErrConflict", err)
			}
			if h.ranB.Load() != 0 {
				t.Errorf("step b ran %d times", h.ranB.Load())
			}
		})
	}
}

// TestReholdBeforeRetryKeepsAttempt: a run held again for another
// divergence before its retry is due (sessions woken by the completions of
// a fan-out, code deployed meanwhile) records the new divergence but stays
// at the same attempt and retry time: the backoff starts at attempt 1.
func TestReholdBeforeRetryKeepsAttempt(t *testing.T) {
	t.Parallel()
	h := &holdHarness{harness: newHarness(t, nil, Config{Linger: -1, Options: Options{HoldRetryDelay: time.Minute, HoldRetryLimit: time.Hour}})}
	for _, name := range []string{"a", "b", "c", "d"} {
		h.reg.step(name, 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	}
	h.reg.wf("w", sleeperCalling("a"))
	h.id = h.start("w", nil)
	h.handle(world.Message{RunID: h.id})
	h.drain()
	h.reg.wf("w", sleeperCalling("b"))
	h.handle(world.Message{RunID: h.id})
	first := divergedRun(t, h.harness, h.id).Hold
	for _, step := range []string{"c", "d"} {
		h.reg.wf("w", sleeperCalling(step)) // another divergence, found before the retry
		h.handle(world.Message{RunID: h.id})
		hold := h.run().Hold
		if hold.Attempt != 1 || !hold.RetryAt.Equal(first.RetryAt) || !strings.Contains(hold.Error.Message, `"`+step+`"`) {
			t.Fatalf("re-hold for step %s: %+v; want attempt 1 retried at %v, naming the new divergence", step, hold, first.RetryAt)
		}
	}
	// The retry itself is a new attempt.
	h.handle(world.Message{RunID: h.id, HoldAttempt: 1})
	if got := h.run().Hold; got.Attempt != 2 {
		t.Fatalf("hold after its retry: %+v, want attempt 2", got)
	}
}
