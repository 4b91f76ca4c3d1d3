package handler_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/world"
)

// The tests of this file judge the answer's time on the real clock: that the
// handler answers before the invocation's deadline is their subject. The
// handler's bounds leave it ReturnMargin/2 (or ReturnMargin/4, releases
// included) before the deadline; the tests set ReturnMargin so that this is
// seconds (the slack noted at each), which a machine at load 30 on 2 cores,
// under the race detector, keeps: scheduling delays of the order of a second
// were seen there, where margins of a few hundred milliseconds failed.
// Their steps are gates the test holds (they outlive the deadline however
// slow the machine), not naps.

// TestSQSStepOutlivesDeadline: a step that ignores cancellation and outlives
// the invocation does not keep the handler from answering before the
// deadline: its message is reported failed (and, with Queue, hidden until
// the step lease expires), the other message of the batch is not.
func TestSQSStepOutlivesDeadline(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{}
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(gateStep, gated)
		// The quick run has 11s to start its two steps (deadline-9s), 12s
		// to end them; the handler gives the stuck one up at deadline-8s
		// and answers at deadline-4s: 4s of slack for a busy machine.
		c.TimeBudgetMargin = 9 * time.Second
		c.Queue = q
		c.Worker.Engine.StepLeaseTTL = 7 * time.Second
	}, knobs: []knobs.Option{knobs.WithReturnMargin(8 * time.Second)}})
	g := newGate(t)
	ctx := context.Background()
	stuck, err := gated.Start(ctx, b.client, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	quick, err := serial.Start(ctx, b.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("stuck", messageBody(t, world.Message{RunID: stuck.ID()}), 1),
		sqsRecord("quick", messageBody(t, world.Message{RunID: quick.ID()}), 1),
	}}
	lctx, cancel := lambdaCtx(t, "req-stuck", 20*time.Second)
	defer cancel()
	deadline, _ := lctx.Deadline()
	resp := invoke(t, lctx, b.fn, ev)
	late := time.Since(deadline)
	close(g.open)
	if late >= 0 {
		t.Fatalf("answered %s after the deadline", late)
	}
	if got := failedIDs(resp); !slices.Equal(got, []string{"stuck"}) {
		t.Errorf("batchItemFailures %v, want [stuck]", got)
	}
	if got := q.releases(); got["rh-stuck"] != 7*time.Second {
		t.Errorf("releases %v, want rh-stuck hidden for the step lease (7s)", got)
	}
	if st, _ := statusOf(ctx, quick); !st.Terminal() {
		t.Errorf("the quick run is %s", st)
	}
	// The abandoned step ends after the answer (in Lambda, in the next
	// thaw of the sandbox). Wait for its record's handling to end, so that
	// it does not outlive the test (and its World).
	waitGivenUp(t, b, time.Minute, 1)
}

// TestSQSReleasesWithinDeadline: the messages the handler gives up at the
// deadline (two abandoned mid-step, one never started) are released at
// once and within the invocation's deadline, however long the queue takes
// to answer: the handler answers in time, which a release after the
// deadline (one after the other, a second each) made it miss, failing the
// whole batch in Lambda.
func TestSQSReleasesWithinDeadline(t *testing.T) {
	t.Parallel()
	q := &stuckQueue{stop: make(chan struct{})}
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(gateStep, gated)
		// Two records at a time: the third is never started. The handler
		// gives the first two up at deadline-12s, stops waiting for them
		// at deadline-6s, and for the releases at deadline-3s: 3s of
		// slack for a busy machine.
		c.Worker.Concurrency = 2
		c.TimeBudgetMargin = 13 * time.Second
		c.Queue = q
		c.Worker.Engine.StepLeaseTTL = 9 * time.Second
	}, knobs: []knobs.Option{knobs.WithReturnMargin(12 * time.Second)}})
	g := newGate(t)
	ctx := context.Background()
	var ev events.SQSEvent
	for _, id := range []string{"a", "b", "c"} {
		run, err := gated.Start(ctx, b.client, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, sqsRecord(id, messageBody(t, world.Message{RunID: run.ID()}), 1))
	}
	lctx, cancel := lambdaCtx(t, "req-release", 20*time.Second)
	defer cancel()
	deadline, _ := lctx.Deadline()
	resp := invoke(t, lctx, b.fn, ev)
	answered := time.Now()
	close(g.open)
	if late := answered.Sub(deadline); late >= 0 {
		t.Errorf("answered %s after the deadline", late)
	}
	got := failedIDs(resp)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("batchItemFailures %v, want [a b c]", got)
	}
	var released []string // before the answer
	for _, c := range q.calls() {
		if c.at.After(answered) {
			continue
		}
		released = append(released, c.receipt)
		if !c.bounded || c.deadline.After(deadline) {
			t.Errorf("release of %s: deadline %v (set: %v), after the invocation's %v", c.receipt, c.deadline, c.bounded, deadline)
		}
	}
	slices.Sort(released)
	if !slices.Equal(released, []string{"rh-a", "rh-b", "rh-c"}) {
		t.Errorf("released %v before answering, want [rh-a rh-b rh-c]", released)
	}
	// The held steps end after the answer, their records given up:
	// nothing releases them again (TestSQSGivenUpRecordReleasedOnce).
	close(q.stop)
	waitGivenUp(t, b, time.Minute, 2) // the third never started
}

// TestSQSReleasesDeafQueue: a queue whose Release does not heed its
// context's end (a client blocked in a call it does not cancel) does not
// hold the answer past the releases' bound, deadline-ReturnMargin/4. The
// handler waited for the releases' goroutines without a bound: it answered
// only when the queue did, after the deadline.
func TestSQSReleasesDeafQueue(t *testing.T) {
	t.Parallel()
	q := &deafQueue{stop: make(chan struct{})}
	defer close(q.stop)
	b := setup(t, setupOptions{config: func(c *handler.Config) {
		c.Worker.Registry.MustRegister(gateStep, gated)
		// The handler gives the record up at deadline-8s, stops waiting
		// for it at deadline-4s, and for its release at deadline-2s: 2s of
		// slack for a busy machine.
		c.TimeBudgetMargin = 9 * time.Second
		c.Queue = q
	}, knobs: []knobs.Option{knobs.WithReturnMargin(8 * time.Second)}})
	g := newGate(t)
	ctx := context.Background()
	run, err := gated.Start(ctx, b.client, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{sqsRecord("deaf", messageBody(t, world.Message{RunID: run.ID()}), 1)}}
	lctx, cancel := lambdaCtx(t, "req-deaf", 14*time.Second)
	defer cancel()
	deadline, _ := lctx.Deadline()
	answered := make(chan events.SQSEventResponse, 1)
	go func() { answered <- invoke(t, lctx, b.fn, ev) }()
	var resp events.SQSEventResponse
	select {
	case resp = <-answered:
	case <-time.After(time.Until(deadline) + 20*time.Second): // a bound against the hang, not a timing judgement
		close(g.open)
		t.Fatal("no answer 20s after the deadline: the handler waits for a release that does not end")
	}
	late := time.Since(deadline)
	close(g.open)
	if late >= 0 {
		t.Errorf("answered %s after the deadline", late)
	}
	if got := failedIDs(resp); !slices.Equal(got, []string{"deaf"}) {
		t.Errorf("batchItemFailures %v, want [deaf]", got)
	}
	if n := q.count(); n != 1 {
		t.Errorf("%d releases asked, want 1", n)
	}
	waitGivenUp(t, b, time.Minute, 1)
}

// deafQueue is a queue whose Release answers only when stop is closed,
// whatever its context says.
type deafQueue struct {
	fakeQueue
	stop  chan struct{}
	mu    sync.Mutex
	calls int
}

func (q *deafQueue) Release(context.Context, *world.ReleaseParams) error {
	q.mu.Lock()
	q.calls++
	q.mu.Unlock()
	<-q.stop
	return nil
}

func (q *deafQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.calls
}

// stuckQueue is a queue whose Release answers only when its context ends
// (or stop is closed), recording the context's deadline.
type stuckQueue struct {
	fakeQueue
	stop     chan struct{}
	mu       sync.Mutex
	released []stuckRelease
}

type stuckRelease struct {
	at       time.Time
	receipt  string
	deadline time.Time
	bounded  bool // the context had a deadline
}

func (q *stuckQueue) Release(ctx context.Context, p *world.ReleaseParams) error {
	d, ok := ctx.Deadline()
	q.mu.Lock()
	q.released = append(q.released, stuckRelease{at: time.Now(), receipt: p.Receipt, deadline: d, bounded: ok})
	q.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-q.stop:
		return nil
	}
}

func (q *stuckQueue) calls() []stuckRelease {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.released)
}
