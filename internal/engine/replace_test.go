package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// sqsMaxReceives is the dead-letter limit of the queue dyingExecutors
// plays: the template's redrive policy (maxReceiveCount 5).
const sqsMaxReceives = 5

// A run whose executors keep dying with its message (each SIGKILLed while
// it runs the step: the message is neither acknowledged nor released, and
// comes back with its receive count one higher) still completes, and its
// message never reaches the queue's receive limit: the executor that
// receives it for the ReplaceAfter-th time sends it again as a new message
// and acknowledges the old one. Before, the one message carried the run
// through every death and was dead-lettered at its sixth receive, leaving
// the run waiting for an operator. Inline (the run's continuation runs the
// step) and in the background (a step message does).
func TestDyingExecutorsDoNotDeadLetterTheRun(t *testing.T) {
	t.Parallel()
	for _, background := range []bool{false, true} {
		name := "inline"
		if background {
			name = "background"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const deaths = 7 // more than maxReceiveCount, fewer than MaxInterruptions
			cfg := Config{Options: Options{StepLeaseTTL: 50 * time.Millisecond}}
			if background {
				cfg.InlineConcurrency = 1 // the workflow's second step is queued
			}
			h := newHarness(t, nil, cfg)
			var calls atomic.Int64
			die := make(chan struct{}, 1)
			h.reg.step("fragile", 0, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				if calls.Add(1) <= deaths {
					die <- struct{}{} // the executor dies here
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return mustJSON("done"), nil
			})
			h.reg.step("first", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
			h.reg.wf("lossy", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
				if background {
					c.Step("first", nil)
				}
				f := c.Step("fragile", nil)
				c.Await(f.Done)
				res, fail := f.Result()
				if fail != nil {
					return nil, &Failure{Data: fail}
				}
				return res, nil
			})
			runID := h.start("lossy", nil)
			dead := dyingExecutors(t, h, runID, die)
			run, err := h.w.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != world.RunStatusCompleted || len(dead) > 0 {
				t.Fatalf("run %s (%+v), dead letters %+v; want completed and none; log:\n%s", run.Status, run.Error, dead, describeLog(h.events(runID)))
			}
			if n := calls.Load(); n != deaths+1 {
				t.Errorf("the step ran %d times, want %d", n, deaths+1)
			}
		})
	}
}

// dyingExecutors consumes the queue, one message at a time, until runID's
// run ends or its messages are all dead, and returns the messages
// dead-lettered: one received more than sqsMaxReceives times is moved
// there, as SQS does. An executor whose step signals die is killed: its
// context is cancelled and, once the engine has returned, the message is
// neither acknowledged nor released; it comes back (with its receive
// count one higher) once the step's lease has expired, as after a
// visibility timeout.
func dyingExecutors(t *testing.T, h *harness, runID string, die <-chan struct{}) (dead []world.Message) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := h.w.GetRun(context.Background(), &world.GetRunParams{RunID: runID}); err != nil || r.Status.Terminal() {
			return dead
		}
		ds, err := h.lw.Receive(context.Background(), &world.ReceiveParams{Max: 1, Wait: 50 * time.Millisecond, Visibility: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			if len(dead) > 0 {
				return dead // nothing left to carry the run on
			}
			continue
		}
		d := ds[0]
		msg, err := world.DecodeMessage(d.Body)
		if err != nil {
			t.Fatal(err)
		}
		if d.Attempt > sqsMaxReceives {
			dead = append(dead, msg)
			_ = h.lw.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt})
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		killed := make(chan bool, 1)
		go func() {
			select {
			case <-die:
				cancel()
				killed <- true
			case <-ctx.Done():
				killed <- false
			}
		}()
		err = h.eng.HandleDelivery(ctx, msg, d.Attempt)
		cancel()
		if <-killed {
			waitLeasesExpired(t, h, runID)
			_ = h.lw.Release(context.Background(), &world.ReleaseParams{Receipt: d.Receipt})
			continue
		}
		if err == nil || IsPermanent(err) {
			_ = h.lw.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt})
		} else {
			_ = h.lw.Release(context.Background(), &world.ReleaseParams{Receipt: d.Receipt})
		}
	}
	t.Fatalf("run %s did not end in 30s", runID)
	return nil
}

// waitLeasesExpired waits until no step of runID runs under a live lease.
func waitLeasesExpired(t *testing.T, h *harness, runID string) {
	t.Helper()
	for range 1000 {
		p, err := h.w.ListSteps(context.Background(), &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
		if err != nil {
			t.Fatal(err)
		}
		live := false
		for _, st := range p.Items {
			live = live || st.Status == world.StepStatusRunning && st.LeaseExpiresAt.After(time.Now())
		}
		if !live {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a step lease outlived 10s")
}

// MaxDeliveries counts the deliveries of the messages a message replaces:
// replacing a message that keeps failing does not let it fail forever.
func TestMaxDeliveriesCountsReplacedDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Options: Options{MaxDeliveries: 10}})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
	id := h.start("w", nil)
	ctx := context.Background()
	if err := h.eng.HandleDelivery(ctx, world.Message{RunID: id, Delivered: 9}, 2); err != nil {
		t.Fatal(err)
	}
	run, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id})
	if run.Status != world.RunStatusFailed || run.ErrorCode != world.CodeMaxDeliveriesExceeded {
		t.Errorf("run %s %s, want failed with %s", run.Status, run.ErrorCode, world.CodeMaxDeliveriesExceeded)
	}
}

// claimWorld plays dynamoworld's idempotency claims across a killed
// sender: the first Enqueue of a replacement under a key claims it and
// dies before the send (an error, nothing sent); a later Enqueue under the
// claimed key is refused with world.ErrKeyPending, as dynamoworld refuses
// it within its PendingGrace (a claim is no proof of a send).
type claimWorld struct {
	*msgWorld
	mu      sync.Mutex
	claimed map[string]bool
}

func (c *claimWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	if p.IdempotencyKey != "" && strings.Contains(string(p.Body), `"delivered"`) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.claimed[p.IdempotencyKey] {
			return nil, fmt.Errorf("key %s: %w", p.IdempotencyKey, world.ErrKeyPending)
		}
		c.claimed[p.IdempotencyKey] = true
		return nil, errors.New("the sender was killed after claiming the key")
	}
	return c.msgWorld.Enqueue(ctx, p)
}

// An executor killed while replacing a message (after claiming the send's
// idempotency key, before sending) must not leave the run with no message
// (seen in TestChaosLambda: runs stuck with an empty queue): the next
// delivery, finding the key claimed but not known sent, sends the
// replacement under no key, and is acknowledged.
func TestKilledReplacerLosesNoRun(t *testing.T) {
	t.Parallel()
	c := &claimWorld{claimed: map[string]bool{}}
	h := newHarness(t, func(lw *localworld.World) world.World { c.msgWorld = &msgWorld{World: lw}; return c }, Config{})
	h.reg.wf("w", func(*Context, json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
	id := h.start("w", nil)
	sent := len(c.snapshot())
	msg := world.Message{RunID: id, RequestedAt: time.Now()}
	// The third delivery's executor is killed mid-replacement (it fails
	// here), the fourth is acknowledged (nil).
	if err := h.eng.HandleDelivery(context.Background(), msg, 3); err == nil {
		t.Fatal("delivery 3: nil, want the killed send's error")
	}
	if err := h.eng.HandleDelivery(context.Background(), msg, 4); err != nil {
		t.Fatalf("delivery 4: %v", err)
	}
	got := c.snapshot()[sent:]
	if len(got) != 1 || got[0].RunID != id || got[0].Delivered != 4 {
		t.Fatalf("sent %+v after the acknowledged delivery, want its one replacement (Delivered 4)", got)
	}
}

// A message received again after its replacement was sent (its executor
// killed between the send and the acknowledgement) is acknowledged as
// replaced, not sent a second time: each such kill used to fork the run's
// messages, and under a high kill rate the forks multiplied
// (TestChaosLambda: one parent's messages delivered 1,121 times). The
// same for a refused message recounted at MaxDeliveries.
func TestReplacedMessageReceivedAgainForksNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      Config
		msg      world.Message
		attempts []int
		want     world.Message // the one message sent
	}{
		{"replace", Config{}, world.Message{Delivered: 2}, []int{3, 4, 5}, world.Message{Delivered: 5}},
		{"recount", Config{ReplaceAfter: -1, Options: Options{MaxDeliveries: 2}}, world.Message{Refused: 2}, []int{3, 4}, world.Message{Delivered: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mw *msgWorld
			h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, tc.cfg)
			h.reg.wf("w", func(*Context, json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
			id := h.start("w", nil)
			sent := len(mw.snapshot())
			msg := tc.msg
			msg.RunID, msg.RequestedAt = id, time.Now()
			for _, a := range tc.attempts {
				if err := h.eng.HandleDelivery(context.Background(), msg, a); err != nil {
					t.Fatalf("delivery %d: %v", a, err)
				}
			}
			got := mw.snapshot()[sent:]
			if len(got) != 1 || got[0].RunID != id || got[0].Delivered != tc.want.Delivered || got[0].Refused != 0 {
				t.Fatalf("sent %+v for %d receives of one message, want one (Delivered %d, Refused 0)", got, len(tc.attempts), tc.want.Delivered)
			}
			other := msg
			other.RequestedAt = msg.RequestedAt.Add(time.Millisecond) // another message of the same run
			if err := h.eng.HandleDelivery(context.Background(), other, tc.attempts[0]); err != nil {
				t.Fatal(err)
			}
			if n := len(mw.snapshot()[sent:]); n != 2 {
				t.Errorf("another message of the run sent %d in all, want its own replacement too (2)", n)
			}
		})
	}
}
