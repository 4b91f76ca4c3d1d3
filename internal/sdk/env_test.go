package sdk_test

import (
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// env is one test's world: a fresh in-memory localworld, a registry, a
// client and a running worker.
type env struct {
	t      *testing.T
	lw     *localworld.World
	reg    *sdk.Registry
	client *sdk.Client
	worker *sdk.Worker
	// stop stops the workers and waits for them: every message in hand
	// has been handled when it returns. The test's cleanup calls it too.
	stop func()
}

type envOptions struct {
	workers     int
	concurrency int
	engine      sdk.EngineOptions
	webhooks    bool
	world       func(*localworld.World) world.World
	logger      *slog.Logger     // the workers' logger
	limits      world.Limits     // the local world's
	now         func() time.Time // the clock of the world, workers and client (default time.Now)
	knobs       []knobs.Option   // the workers' (after the env's own)
}

func newEnv(t *testing.T, defs ...sdk.Definition) *env {
	return newEnvWith(t, envOptions{}, defs...)
}

func newEnvWith(t *testing.T, o envOptions, defs ...sdk.Definition) *env {
	t.Helper()
	lw, err := localworld.Open(localworld.Config{Limits: o.limits}, knobs.WithNow(o.now))
	if err != nil {
		t.Fatal(err)
	}
	var w world.World = lw
	if o.world != nil {
		w = o.world(lw)
	}
	reg := sdk.NewRegistry()
	if err := reg.Register(defs...); err != nil {
		t.Fatal(err)
	}
	if o.workers == 0 {
		o.workers = 1
	}
	if o.concurrency == 0 {
		o.concurrency = 4
	}
	opts := append([]knobs.Option{knobs.WithRunPollInterval(20 * time.Millisecond), knobs.WithPollWait(50 * time.Millisecond),
		knobs.WithRetryDelay(func(int) time.Duration { return 10 * time.Millisecond }), knobs.WithNow(o.now)}, o.knobs...)
	e := &env{t: t, lw: lw, reg: reg}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range o.workers {
		cfg := sdk.WorkerConfig{World: w, Consumer: lw, Registry: reg, Concurrency: o.concurrency, Engine: o.engine, Logger: o.logger}
		if o.webhooks && i == 0 {
			cfg.WebhookAddr = "127.0.0.1:0"
		}
		wk, err := sdk.NewWorker(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			e.worker = wk
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wk.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	e.client, err = sdk.NewClient(sdk.ClientConfig{World: w, Registry: reg}, knobs.WithNow(o.now))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(func() {
		e.stop()
		_ = lw.Close()
	})
	return e
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// events returns a run's log.
func (e *env) events(runID string) []world.Event {
	e.t.Helper()
	var out []world.Event
	cursor := ""
	for {
		p, err := e.lw.ListEvents(context.Background(), &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: 1000}})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, p.Items...)
		if !p.HasMore || len(p.Items) == 0 {
			return out
		}
		cursor = p.Cursor
	}
}

func countEvents(evs []world.Event, types ...world.EventType) int {
	n := 0
	for _, ev := range evs {
		for _, t := range types {
			if ev.Type() == t {
				n++
			}
		}
	}
	return n
}

// steps returns a run's steps.
func (e *env) steps(runID string) []world.Step {
	e.t.Helper()
	p, err := e.lw.ListSteps(context.Background(), &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: 1000}})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Items
}

// stepNamed returns the one step of a run with the given name.
func (e *env) stepNamed(runID, name string) world.Step {
	e.t.Helper()
	var found []world.Step
	for _, s := range e.steps(runID) {
		if s.StepName == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("run %s has %d steps named %q", runID, len(found), name)
	}
	return found[0]
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitEvent waits until a run's log has an event of type t.
func (e *env) waitEvent(runID string, t world.EventType) {
	e.t.Helper()
	waitFor(e.t, string(t)+" in "+runID, func() bool { return countEvents(e.events(runID), t) > 0 })
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func mustAs[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %v (%T) is not a %T", err, err, target)
	}
	return target
}
