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

var waitFlow = workflow.New("wait-for-hook", func(ctx workflow.Context, _ int) (int, error) {
	return workflow.NewHook[int](ctx, workflow.HookOptions{Token: "wrongkey-t"}).Receive(ctx)
})

// syncBuf is a log buffer safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// keyWorker runs a worker on w with a tiny MaxDeliveries and fast retries
// until stop is called (which waits for it to return).
func keyWorker(t *testing.T, w world.World, log *slog.Logger) (stop func()) {
	t.Helper()
	reg := workflow.NewRegistry().MustRegister(waitFlow)
	wk, err := worker.New(worker.Config{
		World: w, Registry: reg, Logger: log,
		Engine: worker.EngineOptions{MaxDeliveries: 3},
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

// TestWrongKeyWorkerNeverFailsTheRun is the scenario of a worker deployed
// with a wrong or missing key: a run sealed with k1 waits on a hook, the
// hook is resumed, and a worker that cannot open k1's data keys receives
// the run's message many times over, far past MaxDeliveries. Its
// deliveries must count for nothing: the run stays running, the worker's
// log names the run and the key at ERROR, and once a worker with the right
// key is back the run completes.
func TestWrongKeyWorkerNeverFailsTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		keys func(t *testing.T) encrypt.Keyring
	}{
		{"wrong bytes for the ID", func(t *testing.T) encrypt.Keyring {
			return keyring(t, "k1", map[string][]byte{"k1": key(9)})
		}},
		{"ID missing", func(t *testing.T) encrypt.Keyring {
			return keyring(t, "k2", map[string][]byte{"k2": key(2)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			bad, err := encrypt.Wrap(lw, encrypt.Config{Keys: tc.keys(t)})
			if err != nil {
				t.Fatal(err)
			}
			reg := workflow.NewRegistry().MustRegister(waitFlow)
			client, err := client.New(client.Config{World: good, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}

			stop := keyWorker(t, good, nil)
			id, err := client.Start(ctx, "wait-for-hook", 1)
			if err != nil {
				t.Fatal(err)
			}
			waitHook(t, lw, id)
			stop()
			if _, err := client.ResumeHook(ctx, "wrongkey-t", 5); err != nil {
				t.Fatal(err)
			}

			var logs syncBuf
			stopBad := keyWorker(t, bad, slog.New(slog.NewTextHandler(&logs, nil)))
			deadline := time.Now().Add(30 * time.Second) // ends at the 8th line
			for strings.Count(logs.String(), id) < 8 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			stopBad()
			out := logs.String()
			if n := strings.Count(out, id); n < 8 {
				t.Fatalf("the wrong-key worker logged run %s %d times, want it to meet the run's message at least 8 times (3 deliveries allowed):\n%s", id, n, out)
			}
			if info, err := client.GetRun(ctx, id); err != nil || info.Status.Terminal() {
				t.Fatalf("after the wrong-key worker: run %+v (%v), want it still running", info, err)
			}
			keyWorker(t, good, nil)
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var got int
			if err := client.Result(rctx, id, &got); err != nil || got != 5 {
				t.Fatalf("with the right key back: result %d, %v; want 5, nil", got, err)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "run="+id) || !strings.Contains(line, "keyId=k1") {
					t.Fatalf("the wrong-key worker logged %q, want every line an ERROR naming run %s and key k1", line, id)
				}
			}
		})
	}
}

// waitHook polls the run's log until its hook is created.
func waitHook(t *testing.T, lw *localworld.World, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p, err := lw.ListEvents(context.Background(), &world.ListEventsParams{RunID: id, Pagination: world.Pagination{Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Items {
			if e.Type() == world.EventHookCreated {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s never created its hook", id)
}
