package peers

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// SkeinMode selects the store of the embedded local World.
type SkeinMode int

const (
	// SkeinMemory: localworld in memory (Config.Path ""): nothing survives
	// the process. Compared with DBOS on SQLite synchronous=NORMAL, the
	// least durable setting of each.
	SkeinMemory SkeinMode = iota
	// SkeinDurable: localworld on a file in the benchmark's directory, with
	// the default durability (Config.Sync SyncEveryCommit: every commit is
	// on stable storage before the call returns) and the default file
	// format. Compared with DBOS on SQLite synchronous=FULL.
	SkeinDurable
)

func (m SkeinMode) String() string {
	switch m {
	case SkeinMemory:
		return "skein-memory"
	case SkeinDurable:
		return "skein-durable"
	}
	return fmt.Sprintf("SkeinMode(%d)", int(m))
}

// SkeinEngine is Skein's engine on the embedded local World in mode m, with
// a worker.Worker running in the process.
//
// The worker is configured as a user gets it: only World and Registry are
// set, so Concurrency (8), PollWait (1s: the longest a receive blocks; the
// local queue wakes receivers at every enqueue and when a delayed message
// comes due, so it adds no latency), BackgroundDelay (50ms), Linger (250ms)
// and InlineConcurrency (16) are the defaults. The one setting that is not a
// default is the client's result poll (knobs.WithResultPoll): run.Result
// polls the run, doubling from 1ms up to it (default 100ms), which would
// measure the polling granularity rather than the run; DBOS's GetResult is
// notified in process, so the client here polls every millisecond.
func SkeinEngine(m SkeinMode) Engine {
	return Engine{
		Name: m.String(),
		Open: func(ctx context.Context, dir string) (Runner, error) { return openSkein(ctx, dir, m) },
	}
}

// countingWorld counts the store's write calls made through it: Appends
// (commits to run logs) and all writes (Appends, queue and lease writes).
// With the log format each write is one transaction, and with the default
// sync policy one flush to the device.
type countingWorld struct {
	*localworld.World
	appends atomic.Int64
	writes  atomic.Int64
}

func (c *countingWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	c.appends.Add(1)
	c.writes.Add(1)
	return c.World.Append(ctx, p)
}

func (c *countingWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	c.writes.Add(1)
	return c.World.Enqueue(ctx, p)
}

func (c *countingWorld) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	ds, err := c.World.Receive(ctx, p)
	if len(ds) > 0 {
		c.writes.Add(1)
	}
	return ds, err
}

func (c *countingWorld) Ack(ctx context.Context, p *world.AckParams) error {
	c.writes.Add(1)
	return c.World.Ack(ctx, p)
}

func (c *countingWorld) Release(ctx context.Context, p *world.ReleaseParams) error {
	c.writes.Add(1)
	return c.World.Release(ctx, p)
}

func (c *countingWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	c.writes.Add(1)
	return c.World.AcquireRunLease(ctx, p)
}

func (c *countingWorld) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	c.writes.Add(1)
	return c.World.RenewRunLease(ctx, p)
}

func (c *countingWorld) ReleaseRunLease(ctx context.Context, p *world.RunLeaseParams) error {
	c.writes.Add(1)
	return c.World.ReleaseRunLease(ctx, p)
}

func (c *countingWorld) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	c.writes.Add(1)
	return c.World.RenewStepLease(ctx, p)
}

// formatRecorder is the local World's logger: it keeps the file format the
// World reports when it opens (a debug record) and passes warnings and
// errors on to stderr.
type formatRecorder struct {
	slog.Handler
	format, sync *string
}

func (h *formatRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *formatRecorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == "localworld: opened" {
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "format":
				*h.format = a.Value.String()
			case "sync":
				*h.sync = a.Value.String()
			}
			return true
		})
	}
	if !h.Handler.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, rec)
}

// skeinRunner runs the benchmark workflows on one local World and one
// in-process worker.
type skeinRunner struct {
	mode   SkeinMode
	lw     *localworld.World
	w      *countingWorld
	client *client.Client
	format string // the local World's file format, "memory" in memory
	sync   string

	seq    *workflow.Workflow[int, int]
	fanout *workflow.Workflow[int, int]
	sleep  *workflow.Workflow[time.Duration, bool]

	stamps atomic.Pointer[[]time.Time] // the current Seq run's, or nil

	// The current SleepWake run's wall-clock times, set by workflow code
	// the first time it passes each point (workflow code before the sleep
	// runs again when the run is replayed after the wake-up).
	mu            sync.Mutex
	before, after time.Time

	cancel context.CancelFunc
	done   chan error
}

func openSkein(_ context.Context, dir string, m SkeinMode) (Runner, error) {
	r := &skeinRunner{mode: m, format: "memory"}
	cfg := localworld.Config{}
	if m == SkeinDurable {
		cfg.Path = filepath.Join(dir, "skein.db")
		cfg.Logger = slog.New(&formatRecorder{
			Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
			format:  &r.format, sync: &r.sync,
		})
	}
	lw, err := localworld.Open(cfg)
	if err != nil {
		return nil, err
	}
	r.lw = lw
	r.w = &countingWorld{World: lw}

	noop := workflow.NewStep("noop", func(_ context.Context, i int) (int, error) {
		if p := r.stamps.Load(); p != nil && i >= 0 && i < len(*p) {
			(*p)[i] = time.Now()
		}
		return 1, nil
	})
	r.seq = workflow.New("seq", func(ctx workflow.Context, n int) (int, error) {
		sum := 0
		for i := range n {
			v, err := noop.Call(ctx, i)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	r.fanout = workflow.New("fanout", func(ctx workflow.Context, n int) (int, error) {
		fs := make([]workflow.Future[int], n)
		for i := range fs {
			fs[i] = noop.Go(ctx, -1)
		}
		vs, err := workflow.All(ctx, fs...)
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, err
	})
	r.sleep = workflow.New("sleep", func(ctx workflow.Context, d time.Duration) (bool, error) {
		r.mark(&r.before)
		if err := workflow.Sleep(ctx, d); err != nil {
			return false, err
		}
		r.mark(&r.after)
		return true, nil
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(r.seq, r.fanout, r.sleep, noop); err != nil {
		_ = lw.Close()
		return nil, err
	}
	wk, err := worker.New(worker.Config{World: r.w, Registry: reg})
	if err != nil {
		_ = lw.Close()
		return nil, err
	}
	r.client, err = client.New(client.Config{World: r.w, Registry: reg}, knobs.WithResultPoll(time.Millisecond))
	if err != nil {
		_ = lw.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- wk.Run(wctx) }()
	return r, nil
}

// mark stores the wall-clock time in *t unless it is already set.
func (r *skeinRunner) mark(t *time.Time) {
	//skein:nondeterministic-ok the benchmark's own wall-clock probe; the workflow's result does not depend on it
	now := time.Now()
	r.mu.Lock()
	if t.IsZero() {
		*t = now
	}
	r.mu.Unlock()
}

func (r *skeinRunner) Seq(ctx context.Context, n int, stamps []time.Time) error {
	if stamps != nil {
		r.stamps.Store(&stamps)
		defer r.stamps.Store(nil)
	}
	run, err := r.seq.Start(ctx, r.client, n)
	if err != nil {
		return err
	}
	got, err := run.Result(ctx)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("seq %d: workflow ran %d steps", n, got)
	}
	return nil
}

func (r *skeinRunner) Fanout(ctx context.Context, n int) error {
	run, err := r.fanout.Start(ctx, r.client, n)
	if err != nil {
		return err
	}
	got, err := run.Result(ctx)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("fanout %d: workflow ran %d steps", n, got)
	}
	return nil
}

func (r *skeinRunner) SleepWake(ctx context.Context, d time.Duration) (time.Duration, error) {
	r.mu.Lock()
	r.before, r.after = time.Time{}, time.Time{}
	r.mu.Unlock()
	run, err := r.sleep.Start(ctx, r.client, d)
	if err != nil {
		return 0, err
	}
	if ok, err := run.Result(ctx); err != nil || !ok {
		return 0, fmt.Errorf("sleep: result %v, %v", ok, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.before.IsZero() || r.after.IsZero() {
		return 0, errors.New("sleep: the workflow did not record its times")
	}
	return r.after.Sub(r.before.Add(d)), nil
}

// Commits returns the number of Appends (commits to run logs) and of all
// store writes made so far.
func (r *skeinRunner) Commits() (appends, writes int64) {
	return r.w.appends.Load(), r.w.writes.Load()
}

// Describe names the store.
func (r *skeinRunner) Describe() string {
	if r.mode == SkeinMemory {
		return "localworld in memory"
	}
	return fmt.Sprintf("localworld file, format=%s sync=%s", r.format, r.sync)
}

func (r *skeinRunner) Close() error {
	r.cancel()
	err := <-r.done
	return errors.Join(err, r.lw.Close())
}
