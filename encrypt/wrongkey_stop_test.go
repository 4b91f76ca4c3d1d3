package encrypt_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// stallWorld is a wrong-key executor's World whose Enqueue (the send-back
// of the message it refuses) reports that it was reached and then waits
// for its context to end: the executor's Worker is stopped at that point,
// mid-delivery, and releases the message.
type stallWorld struct {
	queueWorld
	reached chan struct{}
}

func (s stallWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	select {
	case s.reached <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// oneWorker runs a one-goroutine worker on w (its World and Consumer) with
// MaxDeliveries 3 until stop is called (which waits for it to return).
// queueWorld is a World with its queue's consumer, as encrypt.Wrap's of a
// localworld.World is.
type queueWorld interface {
	world.World
	world.Consumer
}

func oneWorker(t *testing.T, ww world.World, log *slog.Logger) (stop func()) {
	t.Helper()
	w := ww.(queueWorld)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wk, err := worker.New(worker.Config{
		World: w, Consumer: w, Registry: workflow.NewRegistry().MustRegister(waitFlow), Logger: log,
		Concurrency: 1,
		Engine:      worker.EngineOptions{MaxDeliveries: 3},
	}, knobs.WithPollWait(10*time.Millisecond), knobs.WithRetryDelay(func(int) time.Duration { return 5 * time.Millisecond }),
		knobs.WithVersionRetry(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = wk.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitIdle waits until lw's queue holds no message, received or not.
func waitIdle(t *testing.T, lw *localworld.World) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		next, _, err := lw.NextVisible(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if next.IsZero() {
			return
		}
	}
	t.Fatal("the queue never emptied")
}

// TestWrongKeyStoppedDeliveriesNeverCount: the message of a run sealed
// with k1 is received by executors without k1 that are stopped
// mid-delivery (each releases it, and the queue counts one more receive),
// then by a third at its ReplaceAfter-th receive. Those deliveries must
// count for nothing: the third refuses the message as the first two would
// have, rather than replacing it with the count carried on, and once an
// executor with the key is back the run completes instead of failing with
// MAX_DELIVERIES_EXCEEDED at its first delivery. The interleaving is
// forced (stallWorld), not left to the machine's speed.
func TestWrongKeyStoppedDeliveriesNeverCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	good, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k1", map[string][]byte{"k1": key(1)})})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := encrypt.Wrap(lw, encrypt.Config{Keys: keyring(t, "k2", map[string][]byte{"k2": key(2)})})
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Config{World: good, Registry: workflow.NewRegistry().MustRegister(waitFlow)})
	if err != nil {
		t.Fatal(err)
	}
	stop := oneWorker(t, good, nil)
	id, err := client.Start(ctx, "wait-for-hook", 1)
	if err != nil {
		t.Fatal(err)
	}
	waitHook(t, lw, id)
	waitIdle(t, lw) // the start message acknowledged: only the hook's wake-up follows
	stop()
	if _, err := client.ResumeHook(ctx, "wrongkey-t", 5); err != nil {
		t.Fatal(err)
	}

	// Two wrong-key executors, each stopped while it sends the message back.
	for range 2 {
		sw := stallWorld{queueWorld: bad.(queueWorld), reached: make(chan struct{}, 1)}
		stopBad := oneWorker(t, sw, nil)
		select {
		case <-sw.reached:
		case <-time.After(30 * time.Second):
			t.Fatal("the wrong-key executor never refused the message")
		}
		stopBad()
	}
	// A third meets it at its third receive (ReplaceAfter), and then
	// meets what it sent back.
	var logs syncBuf
	stopBad := oneWorker(t, bad, slog.New(slog.NewTextHandler(&logs, nil)))
	for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "keyId=k1") < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	stopBad()
	if n := strings.Count(logs.String(), "keyId=k1"); n < 3 {
		t.Fatalf("the wrong-key executor refused the run's message %d times, want 3:\n%s", n, logs.String())
	}
	if info, err := client.GetRun(ctx, id); err != nil || info.Status.Terminal() {
		t.Fatalf("after the wrong-key executors: run %+v (%v), want it still running", info, err)
	}

	oneWorker(t, good, nil)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got int
	if err := client.Result(rctx, id, &got); err != nil || got != 5 {
		t.Fatalf("with the right key back: result %d, %v; want 5, nil", got, err)
	}
}
