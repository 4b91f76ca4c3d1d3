//go:build integration

package dynamoworld_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// killableConsumer is a Worker's consumer whose process can be killed:
// once killed, it makes no more calls to the queue (no extension, no
// acknowledgement, no release), as a process that died makes none.
type killableConsumer struct {
	*dynamoworld.World
	killed atomic.Bool
	mu     sync.Mutex
	got    []string // the IDs of the messages it received
}

var errKilled = errors.New("the worker's process was killed")

func (c *killableConsumer) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	if c.killed.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ds, err := c.World.Receive(ctx, p)
	c.mu.Lock()
	for _, d := range ds {
		c.got = append(c.got, d.MessageID)
	}
	c.mu.Unlock()
	return ds, err
}

func (c *killableConsumer) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func (c *killableConsumer) Extend(ctx context.Context, p *world.ExtendParams) error {
	if c.killed.Load() {
		return errKilled
	}
	return c.World.Extend(ctx, p)
}

func (c *killableConsumer) Ack(ctx context.Context, p *world.AckParams) error {
	if c.killed.Load() {
		return errKilled
	}
	return c.World.Ack(ctx, p)
}

func (c *killableConsumer) Release(ctx context.Context, p *world.ReleaseParams) error {
	if c.killed.Load() {
		return errKilled
	}
	return c.World.Release(ctx, p)
}

// TestKilledWorkerMessageComesBack: a local Worker on SQS with the default
// Visibility (30s) keeps the message it handles hidden for as long as it
// lives, past its Visibility, by extending it; once its process is killed
// (no more calls to SQS), the message is visible again within the
// Visibility, for the next worker, instead of the 5 minutes the Worker
// once hid it for. Real time is the subject: margins are generous.
func TestKilledWorkerMessageComesBack(t *testing.T) {
	t.Parallel()
	w := dynamotest.NewWorld(t, dynamotest.Options{})
	defer w.Close()
	next, err := dynamoworld.New(context.Background(), w.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var once sync.Once
	hang := workflow.NewStep("hang", func(context.Context, int) (int, error) {
		once.Do(func() { close(started) })
		<-release // the process is killed while the step runs
		return 1, nil
	})
	wf := workflow.New("killed", func(ctx workflow.Context, n int) (int, error) { return hang.Call(ctx, n) })
	reg := workflow.NewRegistry().MustRegister(wf, hang)
	c := &killableConsumer{World: w}
	wk, err := worker.New(worker.Config{World: w, Consumer: c, Registry: reg, Concurrency: 1, StopTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := wf.Start(ctx, wk.Client(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the step did not start")
	}
	ids := c.received()
	if len(ids) != 1 {
		t.Fatalf("the worker received %v, want its run's one message", ids)
	}
	const visibility = 30 * time.Second // WorkerConfig.Visibility's default
	// Alive: the message stays hidden past its Visibility.
	if id, ok := receiveMessage(t, next, ids[0], visibility+10*time.Second); ok {
		t.Fatalf("message %s was delivered again while its worker lived", id)
	}
	c.killed.Store(true)
	killed := time.Now()
	// Dead: it comes back within the Visibility (the margin is for a busy
	// machine and the emulator).
	if _, ok := receiveMessage(t, next, ids[0], visibility+45*time.Second); !ok {
		t.Fatalf("the killed worker's message was not visible again within %s", visibility+45*time.Second)
	}
	took := time.Since(killed)
	t.Logf("the killed worker's message came back %s after the kill (Visibility %s)", took.Round(100*time.Millisecond), visibility)
}

// receiveMessage receives from w for up to d, and reports whether the
// message id came, leaving it hidden; other messages are made visible again
// at once.
func receiveMessage(t *testing.T, w *dynamoworld.World, id string, d time.Duration) (string, bool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 10, Wait: min(time.Until(deadline), 5*time.Second), Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		found := ""
		for _, dl := range ds {
			if dl.MessageID == id {
				found = dl.MessageID
				continue
			}
			if err := w.Release(ctx, &world.ReleaseParams{Receipt: dl.Receipt}); err != nil {
				t.Fatal(err)
			}
		}
		if found != "" {
			return found, true
		}
	}
	return "", false
}
