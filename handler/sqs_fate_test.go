package handler_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// gate is a step the test holds: gated closes started when the step
// begins, which then returns only once open is closed, whatever its context
// says (a step that ignores cancellation).
type gate struct {
	started, open chan struct{}
	once          sync.Once
}

var gates sync.Map // input key -> *gate

var gateStep = workflow.NewStep("handler-gate", func(_ context.Context, key string) (string, error) {
	v, _ := gates.Load(key)
	g := v.(*gate)
	g.once.Do(func() { close(g.started) })
	<-g.open
	return key, nil
})

var gated = workflow.New("handler-gated", func(ctx workflow.Context, key string) (string, error) {
	return gateStep.Call(ctx, key)
})

// newGate registers a gate under the test's name.
func newGate(t *testing.T) *gate {
	g := &gate{started: make(chan struct{}), open: make(chan struct{})}
	gates.Store(t.Name(), g)
	t.Cleanup(func() { gates.Delete(t.Name()) })
	return g
}

// TestSQSGivenUpRecordReleasedOnce: a record given up at the deadline is
// released once, by the handler as it answers; its own goroutine, whose
// step returns after the answer, leaves it alone. It released it again,
// with a receipt the queue may have handed on by then (another invocation
// holding the message would see its visibility changed).
func TestSQSGivenUpRecordReleasedOnce(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{}
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(gateStep, gated)
		// The invocation ends when the test cancels it, once the step has
		// started (the step is held until the handler has answered), not
		// at a deadline that a slow start could reach first.
		c.TimeBudgetMargin = 3 * time.Second
		c.Queue = q
		c.Worker.Engine.StepLeaseTTL = 9 * time.Second
	}, knobs: []knobs.Option{knobs.WithReturnMargin(2 * time.Second)}})
	g := newGate(t)
	ctx := context.Background()
	run, err := gated.Start(ctx, b.client, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{sqsRecord("held", messageBody(t, world.Message{RunID: run.ID()}), 1)}}
	lctx, cancel := lambdaCtx(t, "req-held", time.Minute)
	defer cancel()
	answered := make(chan events.SQSEventResponse, 1)
	go func() { answered <- invoke(t, lctx, b.fn, ev) }()
	var resp events.SQSEventResponse
	select {
	case <-g.started:
		cancel()
		resp = <-answered
	case resp = <-answered:
		close(g.open)
		t.Fatalf("the handler answered %v before the step started", failedIDs(resp))
	}
	if got := failedIDs(resp); len(got) != 1 || got[0] != "held" {
		t.Fatalf("batchItemFailures %v, want [held]", got)
	}
	if n := q.count("rh-held"); n != 1 {
		t.Fatalf("released %d times as the handler answered, want 1", n)
	}
	// The step returns after the answer: the record's goroutine ends and
	// logs that the record was given up, or (the defect) releases it again.
	close(g.open)
	for limit := time.Now().Add(time.Minute); q.count("rh-held") == 1 && !loggedGivenUp(t, b, "held"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatal("the record's goroutine neither ended nor released the message again")
		}
	}
	if n := q.count("rh-held"); n != 1 {
		t.Errorf("released %d times, want 1: the record's goroutine released it after it was given up", n)
	}
	waitLeaseFree(t, b.w, run.ID(), 30*time.Second)
}

// waitGivenUp waits until the handling of n records given up at the
// deadline has ended (they log handlerGivenUpMsg).
func waitGivenUp(t *testing.T, b *testBundle, timeout time.Duration, n int) {
	t.Helper()
	for limit := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		ended := map[any]bool{}
		for _, l := range b.logs.lines(t) {
			if l["message"] == handlerGivenUpMsg {
				ended[l["messageId"]] = true
			}
		}
		if len(ended) >= n {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("the handling of %d of %d records given up ended within %s", len(ended), n, timeout)
		}
	}
}

// loggedGivenUp reports whether the handler logged that the record with
// messageID ended after it was given up at the deadline.
func loggedGivenUp(t *testing.T, b *testBundle, messageID string) bool {
	for _, l := range b.logs.lines(t) {
		if l["messageId"] == messageID && l["message"] == handlerGivenUpMsg {
			return true
		}
	}
	return false
}

const handlerGivenUpMsg = "handler: message ended after it was given up at the deadline; left as reported"

// testClock is the handler's clock: the real one until set.
type testClock struct{ at atomic.Pointer[time.Time] }

func (c *testClock) Now() time.Time {
	if t := c.at.Load(); t != nil {
		return *t
	}
	return time.Now()
}

// Tick is a step of the ticker workflow: the one with I == Jump sets the
// clock registered under Key past the budget (see jumps).
type Tick struct {
	Key     string
	I, Jump int
}

var jumps sync.Map // Tick.Key -> func(): moves the test's clock

var tick = workflow.NewStep("handler-tick", func(_ context.Context, in Tick) (int, error) {
	if in.I == in.Jump {
		if jump, ok := jumps.Load(in.Key); ok {
			jump.(func())()
		}
	}
	return in.I, nil
})

// Ticks is Count ticks one after the other, the one numbered Jump moving
// the clock.
type Ticks struct {
	Key         string
	Count, Jump int
}

var ticker = workflow.New("handler-ticker", func(ctx workflow.Context, in Ticks) (int, error) {
	for i := range in.Count {
		if _, err := tick.Call(ctx, Tick{Key: in.Key, I: i, Jump: in.Jump}); err != nil {
			return i, err
		}
	}
	return in.Count, nil
})

// TestSQSTimeBudgetReenqueues: the engine stops starting steps at
// deadline-TimeBudgetMargin (on the handler's clock, which the test moves
// past it as the fourth step runs), enqueues a continuation and the handler
// answers, reporting nothing failed; later invocations finish the run.
func TestSQSTimeBudgetReenqueues(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(tick, ticker)
		c.TimeBudgetMargin = 3 * time.Second
	}, knobs: []knobs.Option{knobs.WithReturnMargin(time.Second), knobs.WithNow(clock.Now)}})
	ctx := context.Background()
	// The deadline is far on the real clock: the budget runs out on the
	// handler's only.
	lctx, cancel := lambdaCtx(t, "req-budget", time.Minute)
	defer cancel()
	deadline, _ := lctx.Deadline()
	late := deadline.Add(-3 * time.Second)
	jumps.Store(t.Name(), func() { clock.at.Store(&late) })
	t.Cleanup(func() { jumps.Delete(t.Name()) })
	run, err := ticker.Start(ctx, b.client, Ticks{Key: t.Name(), Count: 12, Jump: 3})
	if err != nil {
		t.Fatal(err)
	}
	resp, ds := b.batch(t, lctx, 10, time.Second)
	if len(ds) != 1 || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%d messages, failures %v", len(ds), failedIDs(resp))
	}
	if st, _ := statusOf(ctx, run); st.Terminal() {
		t.Fatal("the run finished past the budget")
	}
	if done := len(countEvents(t, b.w, run.ID(), world.EventStepCompleted)); done != 4 {
		t.Errorf("%d steps done in the first invocation, want 4 (none started past the budget)", done)
	}
	// The run goes on in a new message: a continuation, or the next step
	// queued with its step ID (which queues a continuation once done).
	if q := b.queued(t); len(q) != 1 || q[0].RunID != run.ID() {
		t.Errorf("queued after the budget: %+v, want one message for the run", q)
	}
	clock.at.Store(nil)
	b.drive(t, run.ID(), 10)
	if out, err := run.Result(ctx); err != nil || out != 12 {
		t.Fatalf("result %d, %v", out, err)
	}
}
