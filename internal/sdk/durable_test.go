package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// A subset of the catalogue on the durable store, across a restart: the
// process stops while runs sleep and wait on a hook; a new process on the
// same file finishes them.
func TestDurableStoreSurvivesRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skein.db")
	napper := sdk.New("napper", func(ctx sdk.Context, n int) (int, error) {
		m, err := add.Call(ctx, [2]int{n, 1})
		if err != nil {
			return 0, err
		}
		if err := sdk.Sleep(ctx, 300*time.Millisecond); err != nil {
			return 0, err
		}
		return add.Call(ctx, [2]int{m, 1})
	})
	start := func() (*localworld.World, *sdk.Client, func()) {
		lw, err := localworld.Open(localworld.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		reg := sdk.NewRegistry().MustRegister(addTen, add, napper, hookWorkflow)
		w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg}, knobs.WithPollWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return lw, w.Client(), func() { cancel(); <-done; _ = lw.Close() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	lw, client, stop := start()
	ten, err := addTen.Start(ctx, client, 123)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ten.Result(ctx); err != nil || got != 133 {
		t.Fatalf("addTen = %d, %v", got, err)
	}
	nap, err := napper.Start(ctx, client, 1)
	if err != nil {
		t.Fatal(err)
	}
	hooked, err := hookWorkflow.Start(ctx, client, [2]string{"durable-hook", "d"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both runs suspended", func() bool {
		_, herr := client.GetHookByToken(ctx, "durable-hook")
		evs, err := lw.ListEvents(ctx, &world.ListEventsParams{RunID: nap.ID()})
		return herr == nil && err == nil && countEvents(evs.Items, world.EventWaitCreated) == 1
	})
	stop() // the process goes away

	_, client, stop = start()
	defer stop()
	if _, err := client.ResumeHook(ctx, "durable-hook", hookPayload{Message: "after restart", Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := napper.Get(client, nap.ID()).Result(ctx); err != nil || got != 3 {
		t.Errorf("napper = %d, %v", got, err)
	}
	var got []received
	if err := client.Result(ctx, hooked.ID(), &got); err != nil || len(got) != 1 || got[0].Message != "after restart" {
		t.Errorf("hooked = %+v, %v", got, err)
	}
}

// ackRecorder records the bodies of acknowledged messages.
type ackRecorder struct {
	*localworld.World
	mu     sync.Mutex
	bodies map[string][]byte // receipt -> body
	acked  []string
}

func (a *ackRecorder) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	ds, err := a.World.Receive(ctx, p)
	a.mu.Lock()
	for _, d := range ds {
		a.bodies[d.Receipt] = d.Body
	}
	a.mu.Unlock()
	return ds, err
}

func (a *ackRecorder) Ack(ctx context.Context, p *world.AckParams) error {
	a.mu.Lock()
	a.acked = append(a.acked, string(a.bodies[p.Receipt]))
	a.mu.Unlock()
	return a.World.Ack(ctx, p)
}

func (a *ackRecorder) ackedBodies() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.acked...)
}

func TestWorkerDropsMalformedMessages(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	rec := &ackRecorder{World: lw, bodies: map[string][]byte{}}
	reg := sdk.NewRegistry().MustRegister(addTen, add)
	w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Consumer: rec, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound against a hang
	defer cancel()
	bad := []string{"garbage", `{"runId":"wrun_nope"}`, `{"runId":"wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"}`}
	// A Processor judges each body permanent. Before the Worker runs: one
	// handling the same unknown run at the same time may hold its lease,
	// and a delivery that finds the lease held drops a message of an
	// unknown run without an error (the same end: it is acknowledged).
	p, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range bad {
		if err := p.Process(ctx, []byte(body), 1); !sdk.IsPermanent(err) {
			t.Errorf("Process(%s) = %v, want a permanent error", body, err)
		}
	}
	for _, body := range bad {
		if _, err := lw.Enqueue(ctx, &world.EnqueueParams{Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	// The worker acknowledges each of them once (no retries), and runs
	// still work.
	run, err := addTen.Start(ctx, w.Client(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != 11 {
		t.Fatalf("result %d, %v", got, err)
	}
	waitFor(t, "the bad messages acknowledged", func() bool {
		n := 0
		for _, b := range rec.ackedBodies() {
			for _, want := range bad {
				if b == want {
					n++
				}
			}
		}
		return n == len(bad)
	})
}
