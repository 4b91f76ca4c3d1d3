package skeintest

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// DefaultTimeout bounds, in real time, how long a wait of the environment
// (Wait, Result, WaitSuspended, Advance, Settle) may take before it fails
// the test.
const DefaultTimeout = 10 * time.Second

// workers is the number of messages the environment's Worker handles at
// once: enough for the steps a workflow fans out to run in parallel.
const workers = 4

// farFuture is the longest delay one queue message carries in the
// environment: a timer of any length is one message, not a chain of hops.
const farFuture = 100 * 365 * 24 * time.Hour

// Option configures New.
type Option func(*config)

type config struct {
	manual  bool
	start   time.Time
	timeout time.Duration
	logger  *slog.Logger
	engine  worker.EngineOptions
	stubs   []workflow.Definition
}

// WithManualTime stops the clock from moving by itself: it moves only when
// the test calls Advance. Use it to act while a timer is pending (resume a
// hook before its timeout), or to watch a run between two timers.
func WithManualTime() Option { return func(c *config) { c.manual = true } }

// WithStartTime sets the clock's first reading (default: the real time when
// New is called, to the millisecond).
func WithStartTime(t time.Time) Option { return func(c *config) { c.start = t } }

// WithTimeout bounds, in real time, each wait of the environment (default
// DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithLogger gives the Worker a logger (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithEngineOptions tunes the engine. The environment turns lingering off
// (an invocation would wait for a close timer on a real timer, and the
// virtual clock does not move while it waits), one message carries a timer
// of any length and steps beyond the inline capacity are queued at once;
// unless the options set LogCacheBytes, the engine keeps no run between
// wake-ups (LogCacheBytes -1): every wake-up replays the workflow from its
// log, as a new process would, so workflow code that does not replay the
// same way fails the test at once.
func WithEngineOptions(o worker.EngineOptions) Option { return func(c *config) { c.engine = o } }

// StubStep runs fn in place of step's function in this environment only:
// the Registry given to New and the step itself are left as they are (the
// environment runs a clone of the Registry). The stub keeps the step's name
// and retry policy, so a stub that returns errors is retried with the
// step's backoff, in virtual time.
func StubStep[I, O any](step *workflow.Step[I, O], fn func(ctx context.Context, in I) (O, error)) Option {
	return func(c *config) {
		c.stubs = append(c.stubs, workflow.NewStep(step.Name(), fn, sdk.OptionsOf(step)))
	}
}

// StubWorkflow runs fn in place of wf's function in this environment only,
// as StubStep does for a step: to test a parent workflow without what its
// child runs do, say.
func StubWorkflow[I, O any](wf *workflow.Workflow[I, O], fn func(ctx workflow.Context, in I) (O, error)) Option {
	return func(c *config) {
		c.stubs = append(c.stubs, workflow.New(wf.Name(), fn))
	}
}

// Env is a test environment: an in-memory local world, a Worker running the
// Registry's workflows on it and a virtual clock. New builds and starts it;
// the test's cleanup stops it. Its methods fail the test (t.Fatal) on
// errors, so they must be called from the test's goroutine, except Now,
// Client, World and Context.
type Env struct {
	t      testing.TB
	cfg    config
	lw     *localworld.World
	d      *driver
	client *client.Client
	reg    *workflow.Registry
	ctx    context.Context
}

// New starts an environment running reg's workflows (with the stubs the
// options name) and registers its shutdown with t.Cleanup. Time is virtual
// and, unless WithManualTime, skips ahead by itself while the test waits
// for a run: whenever nothing is left to run at the current time, the clock
// moves to the next timer (a sleep's end, a retry, a held run's next
// replay), so a workflow sleeping for 30 days ends in milliseconds.
func New(t testing.TB, reg *workflow.Registry, opts ...Option) *Env {
	t.Helper()
	if reg == nil {
		t.Fatalf("skeintest: New: nil Registry")
	}
	cfg := config{timeout: DefaultTimeout, start: time.Now().UTC().Truncate(time.Millisecond)}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.timeout <= 0 {
		t.Fatalf("skeintest: New: timeout %s is not positive", cfg.timeout)
	}
	run := sdk.CloneRegistry(reg)
	if len(cfg.stubs) > 0 {
		if err := sdk.Replace(run, cfg.stubs...); err != nil {
			t.Fatalf("skeintest: a stub: %v", err)
		}
	}
	e := &Env{t: t, cfg: cfg, reg: run, d: newDriver(cfg.start, !cfg.manual, workers)}
	lw, err := localworld.Open(localworld.Config{Logger: cfg.logger}, knobs.WithNow(e.d.Now))
	if err != nil {
		t.Fatalf("skeintest: open the local world: %v", err)
	}
	e.lw, e.d.lw = lw, lw
	e.d.hint = func(next time.Time) {
		t.Logf("skeintest: the clock is at %s and a timer is due at %s, but it moves only while the test waits "+
			"in skeintest.Result, Env.Wait, Env.WaitSuspended or Env.WaitDeactivated (Run.Result and Run.WaitDeactivated do not move it)", fmtTime(e.Now()), fmtTime(next))
	}
	eo := cfg.engine
	if eo.LogCacheBytes == 0 {
		eo.LogCacheBytes = -1
	}
	worker, err := worker.New(worker.Config{
		World: lw, Consumer: &consumer{lw: lw, d: e.d}, Registry: run, Concurrency: workers,
		Logger: cfg.logger, Engine: eo,
	}, knobs.WithNow(e.d.Now), knobs.WithLinger(-1), knobs.WithMaxQueueDelay(farFuture), knobs.WithBackgroundDelay(-1))
	if err != nil {
		_ = lw.Close()
		t.Fatalf("skeintest: worker: %v", err)
	}
	e.client, err = client.New(client.Config{
		World: lw, Registry: run, Logger: cfg.logger,
	}, knobs.WithNow(e.d.Now), knobs.WithResultPoll(time.Millisecond))
	if err != nil {
		_ = lw.Close()
		t.Fatalf("skeintest: client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = worker.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		e.d.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := lw.Close(); err != nil && !errors.Is(err, world.ErrClosed) {
			t.Errorf("skeintest: close the local world: %v", err)
		}
	})
	return e
}

// Client returns a client of the environment's world and Registry (with
// the stubs). Its clock is the virtual one. Start runs with it, but wait
// for them with Result or Env.Wait: Run.Result does not move the clock.
func (e *Env) Client() *client.Client { return e.client }

// World returns the environment's world, to read what the client does not
// show. Writing to it behind the engine's back is the test's business.
func (e *Env) World() world.World { return e.lw }

// Registry returns the Registry the environment runs: a clone of the one
// given to New, with the stubs in place.
func (e *Env) Registry() *workflow.Registry { return e.reg }

// Context returns a context that ends when the environment stops, for
// calls such as Workflow.Start and Run.Result.
func (e *Env) Context() context.Context { return e.ctx }

// Now returns the virtual time: what workflows see as Context.Now, and what
// the world records.
func (e *Env) Now() time.Time { return e.d.Now() }

// Advance moves the clock forward by d and returns once everything that
// came due on the way has run. The clock stops at every timer on the way
// (a run sleeping twice for an hour wakes twice in a 3-hour Advance), and
// the world is settled at the new time before Advance returns. It works in
// automatic time too, to move the clock without waiting for a run.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("skeintest: Advance(%s): the clock does not go back", d)
	}
	a := e.d.addAdvance(d)
	e.await(a.done, func() string {
		return fmt.Sprintf("Advance(%s) to %s: the clock is at %s and work is still running", d, fmtTime(a.target), fmtTime(e.Now()))
	})
}

// Settle returns once nothing is left to run at the current time: every
// message due has been handled and every step has ended. It does not move
// the clock.
func (e *Env) Settle() {
	e.t.Helper()
	c := e.d.addCheck(func(context.Context) bool { return true }, false)
	e.await(c.done, func() string {
		e.d.dropCheck(c)
		return "Settle: work is still running at " + fmtTime(e.Now())
	})
}

// ResumeHook sends payload to the hook holding token (see
// client.Client.ResumeHook) and fails the test if no active hook holds it.
func (e *Env) ResumeHook(token string, payload any) {
	e.t.Helper()
	if _, err := e.client.ResumeHook(e.ctx, token, payload); err != nil {
		e.t.Fatalf("skeintest: ResumeHook(%q): %v", token, err)
	}
}

// await waits for done, failing the test with what() after the timeout.
func (e *Env) await(done <-chan struct{}, what func() string) {
	e.t.Helper()
	t := time.NewTimer(e.cfg.timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		e.t.Fatalf("skeintest: timed out after %s: %s", e.cfg.timeout, what())
	}
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
