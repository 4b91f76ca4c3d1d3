package localworld

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

func receive(t *testing.T, w *World, p world.ReceiveParams) []world.Delivery {
	t.Helper()
	ds, err := w.Receive(context.Background(), &p)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return ds
}

func enqueue(t *testing.T, w *World, p world.EnqueueParams) *world.EnqueueResult {
	t.Helper()
	res, err := w.Enqueue(context.Background(), &p)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res
}

func TestQueueBasics(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		clock := newFakeClock()
		cfg := m.config(t)
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		if ds := receive(t, w, world.ReceiveParams{}); len(ds) != 0 {
			t.Fatalf("empty queue delivered %v", ds)
		}
		a := enqueue(t, w, world.EnqueueParams{Body: []byte("a")})
		b := enqueue(t, w, world.EnqueueParams{Body: []byte("b")})
		later := enqueue(t, w, world.EnqueueParams{Body: []byte("later"), Delay: time.Minute})
		ds := receive(t, w, world.ReceiveParams{Max: 10, Visibility: 10 * time.Second})
		if len(ds) != 2 || ds[0].MessageID != a.MessageID || string(ds[1].Body) != "b" || ds[0].Attempt != 1 || !ds[0].EnqueuedAt.Equal(clock.Now()) {
			t.Fatalf("first receive: %+v", ds)
		}
		// Hidden while in flight.
		if ds := receive(t, w, world.ReceiveParams{Max: 10}); len(ds) != 0 {
			t.Fatalf("in-flight messages delivered again: %+v", ds)
		}
		if err := w.Ack(ctx, &world.AckParams{Receipt: ds[0].Receipt}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		err := w.Ack(ctx, &world.AckParams{Receipt: ds[0].Receipt})
		wantErrIs(t, err, world.ErrNotFound, "second Ack")
		// Visibility expires: b comes back as attempt 2 and its old receipt is stale.
		clock.Advance(11 * time.Second)
		again := receive(t, w, world.ReceiveParams{Max: 10})
		if len(again) != 1 || again[0].MessageID != b.MessageID || again[0].Attempt != 2 {
			t.Fatalf("after visibility timeout: %+v", again)
		}
		err = w.Ack(ctx, &world.AckParams{Receipt: ds[1].Receipt})
		wantErrIs(t, err, world.ErrConflict, "stale receipt")
		// Release with a delay.
		if err := w.Release(ctx, &world.ReleaseParams{Receipt: again[0].Receipt, Delay: 5 * time.Second}); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if ds := receive(t, w, world.ReceiveParams{}); len(ds) != 0 {
			t.Fatalf("released message visible before its delay: %+v", ds)
		}
		clock.Advance(5 * time.Second)
		third := receive(t, w, world.ReceiveParams{})
		if len(third) != 1 || third[0].Attempt != 3 {
			t.Fatalf("after release delay: %+v", third)
		}
		if err := w.Ack(ctx, &world.AckParams{Receipt: third[0].Receipt}); err != nil {
			t.Fatal(err)
		}
		// The delayed message.
		clock.Advance(time.Minute)
		if ds := receive(t, w, world.ReceiveParams{}); len(ds) != 1 || ds[0].MessageID != later.MessageID {
			t.Fatalf("delayed message: %+v", ds)
		}
		for _, r := range []string{"", "nope", "msg_x.0", "msg_x.abc"} {
			err := w.Ack(ctx, &world.AckParams{Receipt: r})
			wantErrIs(t, err, world.ErrInvalid, fmt.Sprintf("Ack(%q)", r))
		}
		_, err = w.Enqueue(ctx, &world.EnqueueParams{Delay: -time.Second})
		wantErrIs(t, err, world.ErrInvalid, "negative delay")
	})
}

func TestQueueDedupe(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		clock := newFakeClock()
		cfg := m.config(t)
		cfg.DedupeWindow = time.Hour
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		first := enqueue(t, w, world.EnqueueParams{Body: []byte("1"), IdempotencyKey: "k"})
		dup := enqueue(t, w, world.EnqueueParams{Body: []byte("2"), IdempotencyKey: "k"})
		if first.Duplicate || !dup.Duplicate || dup.MessageID != first.MessageID {
			t.Fatalf("dedupe: %+v then %+v", first, dup)
		}
		// Acking does not end the window.
		ds := receive(t, w, world.ReceiveParams{Max: 10})
		if len(ds) != 1 {
			t.Fatalf("delivered %d messages, want 1", len(ds))
		}
		if err := w.Ack(context.Background(), &world.AckParams{Receipt: ds[0].Receipt}); err != nil {
			t.Fatal(err)
		}
		if res := enqueue(t, w, world.EnqueueParams{IdempotencyKey: "k"}); !res.Duplicate {
			t.Fatal("key forgotten after ack")
		}
		// The window ends; expired keys are swept.
		clock.Advance(time.Hour + time.Second)
		other := enqueue(t, w, world.EnqueueParams{IdempotencyKey: "other"})
		again := enqueue(t, w, world.EnqueueParams{IdempotencyKey: "k"})
		if again.Duplicate || again.MessageID == first.MessageID || other.Duplicate {
			t.Fatalf("after window: %+v", again)
		}
		var keys int
		_ = w.s.kv.view(func(tx kvTx) error {
			return tx.scan(bQueueIdemExpiry, nil, nil, false, func(_, _ []byte) bool { keys++; return true })
		})
		if keys != 2 {
			t.Fatalf("%d idempotency expiry entries, want 2", keys)
		}
	})
}

// A waiting Receive wakes at an Enqueue, not at its next poll.
func TestQueueWakesOnEnqueue(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		got := make(chan time.Time, 1)
		go func() {
			ds, err := w.Receive(context.Background(), &world.ReceiveParams{Wait: 10 * time.Second})
			if err != nil || len(ds) != 1 {
				t.Errorf("Receive: %v, %v", ds, err)
			}
			got <- time.Now()
		}()
		time.Sleep(50 * time.Millisecond)
		sent := time.Now()
		enqueue(t, w, world.EnqueueParams{Body: []byte("x")})
		// Woken, it returns at once; unwoken, at the end of its 10s Wait.
		// The bound between holds on a busy machine.
		select {
		case at := <-got:
			if d := at.Sub(sent); d > 5*time.Second {
				t.Fatalf("woke %s after the enqueue", d)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Receive did not wake")
		}
	})
}

// A waiting Receive wakes when a delayed message is due, neither before nor
// much after, including one enqueued while it waits. The slow message is
// far enough out (6s) that "much after" has a margin a busy machine keeps:
// a Receive that slept until it would deliver the fast one 3s late or more.
func TestQueueDelayTiming(t *testing.T) {
	t.Parallel()
	const slow, fast, late = 6 * time.Second, 300 * time.Millisecond, 3 * time.Second
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		start := time.Now()
		enqueue(t, w, world.EnqueueParams{Body: []byte("slow"), Delay: slow})
		sent := make(chan time.Time, 1)
		go func() {
			time.Sleep(50 * time.Millisecond) // the Receive below is (usually) waiting
			at := time.Now()
			enqueue(t, w, world.EnqueueParams{Body: []byte("fast"), Delay: fast})
			sent <- at
		}()
		ds := receive(t, w, world.ReceiveParams{Wait: 15 * time.Second})
		took, fastAt := time.Since(start), <-sent
		if len(ds) != 1 || string(ds[0].Body) != "fast" {
			t.Fatalf("first delivery: %+v", ds)
		}
		if due := fastAt.Add(fast).Sub(start); took < due || took > due+late {
			t.Fatalf("delivered after %s, want about %s", took, due)
		}
		ds = receive(t, w, world.ReceiveParams{Wait: 15 * time.Second})
		took = time.Since(start)
		if len(ds) != 1 || string(ds[0].Body) != "slow" || took < slow || took > slow+late {
			t.Fatalf("second delivery after %s: %+v", took, ds)
		}
		// Wait ends empty.
		start = time.Now()
		if ds := receive(t, w, world.ReceiveParams{Wait: 100 * time.Millisecond}); len(ds) != 0 {
			t.Fatalf("empty queue delivered %+v", ds)
		}
		if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
			t.Fatalf("empty wait took %s", took)
		}
	})
}

func TestQueueReceiveStops(t *testing.T) {
	t.Parallel()
	w := mustOpen(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() {
		_, err := w.Receive(ctx, &world.ReceiveParams{Wait: time.Minute})
		errs <- err
	}()
	go func() {
		_, err := w.Receive(context.Background(), &world.ReceiveParams{Wait: time.Minute})
		errs <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Receive: %v", err)
	}
	_ = w.Close()
	select {
	case err := <-errs:
		if !errors.Is(err, world.ErrClosed) {
			t.Fatalf("Receive at Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not stop a waiting Receive")
	}
	if _, err := w.Enqueue(context.Background(), &world.EnqueueParams{}); !errors.Is(err, world.ErrClosed) {
		t.Fatalf("Enqueue after Close: %v", err)
	}
}

// Every message is delivered exactly once to concurrent receivers that ack.
func TestQueueConcurrentReceivers(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		w := mustOpen(t, m.config(t))
		const n = 200
		for i := range n {
			enqueue(t, w, world.EnqueueParams{Body: []byte(fmt.Sprint(i))})
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					ds, err := w.Receive(context.Background(), &world.ReceiveParams{Max: 7, Wait: 50 * time.Millisecond, Visibility: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					if len(ds) == 0 {
						return
					}
					for _, d := range ds {
						mu.Lock()
						seen[string(d.Body)]++
						mu.Unlock()
						if err := w.Ack(context.Background(), &world.AckParams{Receipt: d.Receipt}); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("delivered %d distinct messages, want %d", len(seen), n)
		}
		for b, c := range seen {
			if c != 1 {
				t.Fatalf("message %s delivered %d times", b, c)
			}
		}
	})
}

func TestQueueSurvivesReopen(t *testing.T) {
	t.Parallel()
	cfg := mode{durable: true}.config(t)
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := enqueue(t, w, world.EnqueueParams{Body: []byte("now")})
	enqueue(t, w, world.EnqueueParams{Body: []byte("soon"), Delay: 300 * time.Millisecond})
	dup := enqueue(t, w, world.EnqueueParams{Body: []byte("keyed"), IdempotencyKey: "k"})
	inflight := receive(t, w, world.ReceiveParams{Visibility: 200 * time.Millisecond})
	if len(inflight) != 1 || inflight[0].MessageID != now.MessageID {
		t.Fatalf("receive: %+v", inflight)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, cfg)
	if res := enqueue(t, w, world.EnqueueParams{IdempotencyKey: "k"}); !res.Duplicate || res.MessageID != dup.MessageID {
		t.Fatalf("idempotency key lost at reopen: %+v", res)
	}
	got := map[string]int{}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		for _, d := range receive(t, w, world.ReceiveParams{Max: 10, Wait: time.Second, Visibility: time.Minute}) {
			got[string(d.Body)] = d.Attempt
		}
	}
	if got["now"] != 2 || got["soon"] != 1 || got["keyed"] != 1 {
		t.Fatalf("after reopen delivered %v", got)
	}
}

// Reopening a durable store makes visible at once the messages the previous
// process received and never acknowledged (it is gone: the store's lock
// says so), each delivery still counted; messages hidden by a delay, or
// released with one, stay hidden until their time.
func TestOpenReleasesAbandonedMessages(t *testing.T) {
	t.Parallel()
	cfg := Config{Path: filepath.Join(t.TempDir(), "world.db")}
	w := mustOpen(t, cfg)
	held := enqueue(t, w, world.EnqueueParams{Body: []byte("held")})
	if got := receive(t, w, world.ReceiveParams{Visibility: time.Hour}); len(got) != 1 || got[0].MessageID != held.MessageID {
		t.Fatalf("receive: %+v", got)
	}
	enqueue(t, w, world.EnqueueParams{Body: []byte("delayed"), Delay: time.Hour})
	enqueue(t, w, world.EnqueueParams{Body: []byte("released")})
	rel := receive(t, w, world.ReceiveParams{Visibility: time.Hour})
	if len(rel) != 1 || string(rel[0].Body) != "released" {
		t.Fatalf("receive: %+v", rel)
	}
	if err := w.Release(context.Background(), &world.ReleaseParams{Receipt: rel[0].Receipt, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // the process that held "held" is gone
	w = mustOpen(t, cfg)
	got := receive(t, w, world.ReceiveParams{Max: 10, Wait: 200 * time.Millisecond, Visibility: time.Minute})
	if len(got) != 1 || got[0].MessageID != held.MessageID || got[0].Attempt != 2 {
		t.Fatalf("after reopen delivered %+v, want only %q, attempt 2", got, "held")
	}
}

func TestNextVisible(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m mode) {
		ctx := context.Background()
		clock := newFakeClock()
		cfg := m.config(t)
		w := mustOpen(t, cfg, knobs.WithNow(clock.Now))
		next, changed, err := w.NextVisible(ctx)
		if err != nil || !next.IsZero() {
			t.Fatalf("empty queue: next %v, err %v; want zero", next, err)
		}
		enqueue(t, w, world.EnqueueParams{Body: []byte("later"), Delay: time.Hour})
		select {
		case <-changed:
		default:
			t.Fatal("the channel NextVisible returned was not closed by an enqueue")
		}
		soon := enqueue(t, w, world.EnqueueParams{Body: []byte("soon"), Delay: time.Minute})
		next, changed, err = w.NextVisible(ctx)
		if err != nil || !next.Equal(clock.Now().Add(time.Minute)) {
			t.Fatalf("next %v, err %v; want %v", next, err, clock.Now().Add(time.Minute))
		}
		clock.Advance(time.Minute)
		ds := receive(t, w, world.ReceiveParams{Visibility: 10 * time.Second})
		if len(ds) != 1 || ds[0].MessageID != soon.MessageID {
			t.Fatalf("received %+v, want the message due in a minute", ds)
		}
		// In flight, it counts at the end of its visibility.
		if next, _, _ = w.NextVisible(ctx); !next.Equal(clock.Now().Add(10 * time.Second)) {
			t.Fatalf("next with a message in flight: %v, want %v", next, clock.Now().Add(10*time.Second))
		}
		if err := w.Release(ctx, &world.ReleaseParams{Receipt: ds[0].Receipt, Delay: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		default:
			t.Fatal("the channel NextVisible returned was not closed by a release")
		}
		if next, _, _ = w.NextVisible(ctx); !next.Equal(clock.Now().Add(5 * time.Second)) {
			t.Fatalf("next after a release: %v, want %v", next, clock.Now().Add(5*time.Second))
		}
	})
}
