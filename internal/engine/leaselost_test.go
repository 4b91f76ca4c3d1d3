package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// manualClock is a clock only the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openClocked opens an in-memory local world on a clock only the test
// moves, closed when the test ends.
func openClocked(t *testing.T) (*manualClock, *localworld.World) {
	t.Helper()
	clock := &manualClock{t: time.Now()}
	lw, err := localworld.Open(localworld.Config{}, knobs.WithNow(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	return clock, lw
}

// lapseWorld is a localworld that can fail run lease renewals, and counts
// the commits and lease releases made once the test has taken the lease
// from the session (after).
type lapseWorld struct {
	*localworld.World
	failRenew atomic.Bool // renewals fail with a transient error
	after     atomic.Bool
	appends   atomic.Int32 // Appends once after is set
	releases  atomic.Int32 // ReleaseRunLease calls once after is set
}

func (w *lapseWorld) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	if w.failRenew.Load() {
		return nil, errors.New("throttled")
	}
	return w.World.RenewRunLease(ctx, p)
}

func (w *lapseWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if w.after.Load() {
		w.appends.Add(1)
	}
	return w.World.Append(ctx, p)
}

func (w *lapseWorld) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	if w.after.Load() {
		w.releases.Add(1)
	}
	return w.World.ReleaseRunLease(ctx, p)
}

// lapseLease is the run lease of TestSessionStopsWhenItsLeaseIsLost: it is
// judged on the test's clock, which stands still unless the test moves it,
// so the lease lapses only when the test says; it sets how often the
// session renews (every third of it, on the wall clock).
const lapseLease = 300 * time.Millisecond

// A session whose run lease is lost while a step runs stops: the step sees
// its context cancelled, the step's outcome is not committed, the next
// step never runs, nothing at all is committed once the lease is gone, the
// lease (now another's) is not released, and the delivery fails with an
// error matching world.ErrLeaseLost. The lease is lost two ways, on a clock
// the test moves: the lease expires (the clock passes it) and another owner
// takes it, so the next renewal is refused; or the renewals fail (the World
// cannot be reached) until the lease may have lapsed.
func TestSessionStopsWhenItsLeaseIsLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, w *lapseWorld, clock *manualClock, runID string)
	}{
		{"taken by another owner", func(t *testing.T, w *lapseWorld, clock *manualClock, runID string) {
			clock.Advance(time.Minute) // past the session's lease, however it renewed
			w.after.Store(true)
			if _, err := w.AcquireRunLease(context.Background(), &world.RunLeaseParams{RunID: runID, Owner: "intruder", TTL: time.Hour}); err != nil {
				t.Fatalf("taking the expired lease: %v", err)
			}
		}},
		{"renewals failing until it lapses", func(t *testing.T, w *lapseWorld, clock *manualClock, _ string) {
			w.failRenew.Store(true)
			w.after.Store(true)
			clock.Advance(lapseLease) // no renewal gets through from here on
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testLeaseLost(t, tc.lose)
		})
	}
}

func testLeaseLost(t *testing.T, lose func(*testing.T, *lapseWorld, *manualClock, string)) {
	clock, lw := openClocked(t)
	w := &lapseWorld{World: lw}
	reg := newRegistry()
	eng, err := New(Config{World: w, Registry: reg, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil)), Options: Options{RunLeaseTTL: lapseLease}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)

	started, lost := make(chan struct{}), make(chan struct{})
	var cancelled, secondRan atomic.Bool
	reg.step("first", 0, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(started)
		select {
		case <-ctx.Done():
			cancelled.Store(true)
			return nil, ctx.Err()
		case <-lost:
		}
		// The lease is lost: the session must cancel this step. Should it
		// not within 20s, the step returns, as a step ignoring the loss
		// would, and the session goes on.
		select {
		case <-ctx.Done():
			cancelled.Store(true)
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return mustJSON(1), nil
		}
	})
	reg.step("second", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		secondRan.Store(true)
		return mustJSON(2), nil
	})
	reg.wf("lapsing", func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		f := c.Step("first", nil)
		c.Await(f.Done)
		g := c.Step("second", nil)
		c.Await(g.Done)
		return mustJSON(2), nil
	})
	runID := world.NewIDSource(nil, nil).New(world.PrefixRun)
	// No deadline on ctx: the session's budget would mix it, on the wall
	// clock, with the test's clock.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := w.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "lapsing", Input: json.RawMessage("null")}}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- eng.HandleDelivery(ctx, world.Message{RunID: runID}, 1) }()
	select {
	case <-started:
	case err := <-done:
		evs, _ := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100}})
		ds, _ := lw.Receive(ctx, &world.ReceiveParams{Max: 10})
		for _, d := range ds {
			t.Logf("queued: %s", d.Body)
		}
		t.Fatalf("the delivery ended before the step started: %v; log:\n%s", err, describeLog(evs.Items))
	}
	lose(t, w, clock, runID)
	close(lost)
	select {
	case err := <-done:
		if !errors.Is(err, world.ErrLeaseLost) {
			t.Errorf("the delivery returned %v, want an error matching world.ErrLeaseLost", err)
		}
	case <-time.After(time.Minute): // the step gives up waiting after 20s
		t.Fatal("the delivery did not end after its lease was lost")
	}
	if !cancelled.Load() {
		t.Error("the step in flight did not see its context cancelled when the lease was lost")
	}
	if secondRan.Load() {
		t.Error("the next step ran after the lease was lost")
	}
	if n := w.appends.Load(); n != 0 {
		t.Errorf("the session committed %d times after its lease was lost, want none", n)
	}
	if n := w.releases.Load(); n != 0 {
		t.Errorf("the session released the lease %d times after losing it, want none", n)
	}
	evs, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.Type() == world.EventStepCompleted {
			t.Errorf("a step's outcome was committed after the lease was lost:\n%s", describeLog(evs.Items))
		}
	}
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
