package sdk_test

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// Failure modes a durable engine of this shape is prone to, as regression
// tests: a fan-out that never converges, more than one commit per serial
// step, a step killed in the middle that never runs again, a hook payload
// lost while a step runs, a replay that differs, a start that is not
// idempotent, a worker that leaks goroutines on shutdown.

func TestFanOutConvergence(t *testing.T) {
	t.Parallel()
	const n = 40
	work := sdk.NewStep("work", func(ctx context.Context, i int) (int, error) {
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
		return i * i, nil
	})
	fan := sdk.New("fanOut", func(ctx sdk.Context, n int) (int, error) {
		fs := make([]sdk.Future[int], n)
		for i := range fs {
			fs[i] = work.Go(ctx, i)
		}
		vs, err := sdk.All(ctx, fs...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vs {
			sum += v
		}
		// A second batch after the first: the steps of the second batch are
		// created by the continuation that takes the first batch's results in.
		more := make([]sdk.Future[int], 5)
		for i := range more {
			more[i] = work.Go(ctx, i)
		}
		vs, err = sdk.All(ctx, more...)
		for _, v := range vs {
			sum += v
		}
		return sum, err
	})
	// Several workers, each with several slots, and a small inline capacity:
	// most steps run in the background and many continuations race. With
	// no background delay every excess step is queued at once; with a short
	// one, some run inline and the rest are queued later.
	for _, cfg := range []struct {
		name  string
		delay time.Duration
	}{{"queued", -1}, {"mixed", 5 * time.Millisecond}} {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{workers: 3, concurrency: 4, engine: sdk.EngineOptions{InlineConcurrency: 4}, knobs: []knobs.Option{knobs.WithBackgroundDelay(cfg.delay)}}, fan, work)
			background := fanOutRounds(t, e, fan, n)
			if cfg.delay < 0 && background == 0 {
				t.Error("no step ran in the background")
			}
			t.Logf("%d steps started apart from their creation", background)
		})
	}
}

// fanOutRounds runs the fan-out three times concurrently and checks each
// log; it returns how many steps were started apart from their creation
// (by a background executor or a later commit).
func fanOutRounds(t *testing.T, e *env, fan *sdk.Workflow[int, int], n int) int {
	var background atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Convergence is the subject, not speed: 135 steps over three
			// runs took 22 s under a loaded `make test`, so the bound is wide.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run, err := fan.Start(ctx, e.client, n)
			if err != nil {
				t.Error(err)
				return
			}
			got, err := run.Result(ctx)
			want := 0
			for i := range n {
				want += i * i
			}
			want += 0 + 1 + 4 + 9 + 16
			if err != nil || got != want {
				t.Errorf("result %d, %v; want %d", got, err, want)
				return
			}
			evs := e.events(run.ID())
			for i, ev := range evs {
				if ev.Type() == world.EventStepStarted && (i == 0 || evs[i-1].CorrelationID != ev.CorrelationID) {
					background.Add(1)
				}
			}
			completed := map[string]int{}
			for _, ev := range evs {
				switch d := ev.Data.(type) {
				case *world.StepCompleted:
					completed[ev.CorrelationID]++
				case *world.StepStarted:
					if d.Attempt != 1 {
						t.Errorf("step %s started with attempt %d", ev.CorrelationID, d.Attempt)
					}
				}
			}
			if len(completed) != n+5 {
				t.Errorf("%d steps completed, want %d", len(completed), n+5)
			}
			for id, c := range completed {
				if c != 1 {
					t.Errorf("step %s completed %d times", id, c)
				}
			}
			if c := countEvents(evs, world.EventStepStarted); c != n+5 {
				t.Errorf("%d step_started, want %d (attempts counted once)", c, n+5)
			}
			if c := countEvents(evs, world.EventRunCompleted, world.EventRunFailed, world.EventRunCancelled); c != 1 {
				t.Errorf("%d terminal events, want 1", c)
			}
			for _, s := range e.steps(run.ID()) {
				if s.Attempt != 1 || s.Status != world.StepStatusCompleted {
					t.Errorf("step %s: attempt %d %s", s.StepID, s.Attempt, s.Status)
				}
			}
		}()
	}
	wg.Wait()
	return int(background.Load())
}

// countingWorld counts the commits (Append calls) of one run.
type countingWorld struct {
	*localworld.World
	mu      sync.Mutex
	appends map[string]int
}

func (c *countingWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	c.mu.Lock()
	c.appends[p.RunID]++
	c.mu.Unlock()
	return c.World.Append(ctx, p)
}

func (c *countingWorld) count(runID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appends[runID]
}

func TestOneCommitPerSerialStep(t *testing.T) {
	t.Parallel()
	inc := sdk.NewStep("inc", func(ctx context.Context, n int) (int, error) { return n + 1, nil })
	serial := sdk.New("serial", func(ctx sdk.Context, steps int) (int, error) {
		n := 0
		for range steps {
			var err error
			if n, err = inc.Call(ctx, n); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	var cw *countingWorld
	e := newEnvWith(t, envOptions{world: func(lw *localworld.World) world.World {
		cw = &countingWorld{World: lw, appends: map[string]int{}}
		return cw
	}}, serial, inc)
	for _, steps := range []int{1, 10, 100} {
		t.Run(fmt.Sprint(steps), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := serial.Start(ctx, e.client, steps)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := run.Result(ctx); err != nil || got != steps {
				t.Fatalf("result %d, %v", got, err)
			}
			// run_created, then one commit per step (step k's completion with
			// step k+1's creation and start), then the last step's
			// completion with run_completed.
			if got, want := cw.count(run.ID()), 1+steps+1; got != want {
				t.Errorf("%d commits for %d steps, want %d", got, steps, want)
			}
		})
	}
}

func TestStepKilledMidExecutionReruns(t *testing.T) {
	t.Parallel()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	type start struct {
		attempt int
		at      time.Time
	}
	started := make(chan start, 4)
	var calls atomic.Int32
	fragile := sdk.NewStep("fragile", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		started <- start{m.Attempt, time.Now()}
		if calls.Add(1) == 1 {
			<-ctx.Done() // the process dies here
			return 0, ctx.Err()
		}
		return m.Attempt, nil
	})
	wf := sdk.New("killed", func(ctx sdk.Context, _ struct{}) (int, error) {
		return fragile.Call(ctx, struct{}{})
	})
	reg := sdk.NewRegistry().MustRegister(wf, fragile)
	opts := sdk.EngineOptions{StepLeaseTTL: 300 * time.Millisecond}
	p, err := sdk.NewProcessor(sdk.WorkerConfig{World: lw, Registry: reg, Engine: opts}, knobs.WithRunPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound against a hang
	defer cancel()
	run, err := wf.Start(ctx, p.Client(), struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	// The "dead" executor: receives the start message, starts the step and
	// dies mid-step without recording anything or acknowledging.
	ds, err := lw.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second, Visibility: 100 * time.Millisecond})
	if err != nil || len(ds) != 1 {
		t.Fatalf("receive: %v %v", ds, err)
	}
	dead, kill := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Process(dead, ds[0].Body, ds[0].Attempt) }()
	select {
	case s := <-started:
		if s.attempt != 1 {
			t.Fatalf("first attempt %d", s.attempt)
		}
	case err := <-done:
		t.Fatalf("the first delivery ended (%v) without starting the step", err)
	case <-ctx.Done():
		t.Fatal("the step never started")
	}
	kill()
	<-done
	st := stepOf(t, lw, run.ID())
	if st.Status != world.StepStatusRunning || st.Attempt != 1 {
		t.Fatalf("after the kill: %s attempt %d", st.Status, st.Attempt)
	}
	// The dead executor renews its lease no more: the step may run again
	// only once it has expired. Judged against the lease's own expiry, not
	// a time since the kill, which a busy machine can stretch either way.
	expires := st.LeaseExpiresAt
	if expires.IsZero() {
		t.Fatal("the running step has no lease expiry")
	}
	// A healthy worker picks the message up again; the step re-runs once
	// its lease expires, as attempt 1 again: the first was interrupted by
	// the loss of its worker, not failed, and uses none of the retries.
	w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Concurrency: 2, Engine: opts}, knobs.WithPollWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(wctx) }()
	defer func() { wcancel(); <-wdone }()
	got, err := run.Result(ctx)
	if err != nil || got != 1 {
		t.Fatalf("result %d, %v; want attempt 1", got, err)
	}
	if s := <-started; s.attempt != 1 { // buffered: the step started before the run ended
		t.Errorf("second run's attempt %d, want 1", s.attempt)
	} else if s.at.Before(expires) {
		t.Errorf("re-ran at %s, %s before the dead executor's lease expired", s.at.Format(time.StampMicro), expires.Sub(s.at))
	}
	st = stepOf(t, lw, run.ID())
	if st.Attempt != 2 || st.Interrupted != 1 || st.Status != world.StepStatusCompleted {
		t.Errorf("step %s attempt %d, %d interrupted; want completed, started twice, once interrupted", st.Status, st.Attempt, st.Interrupted)
	}
}

func stepOf(t *testing.T, lw *localworld.World, runID string) world.Step {
	t.Helper()
	p, err := lw.ListSteps(context.Background(), &world.ListStepsParams{RunID: runID})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("steps: %v %v", p, err)
	}
	return p.Items[0]
}

func TestHookPayloadDuringExecutionIsNotLost(t *testing.T) {
	t.Parallel()
	const payloads = 20
	// Each step resumes the run's own hook while it runs, so the payload is
	// appended while the invocation holds uncommitted results: its commit
	// is refused and the workflow is rebuilt with the payload.
	poke := sdk.NewStep("poke", func(ctx context.Context, in struct {
		Token string
		I     int
	}) (int, error) {
		if _, err := sdk.ClientFrom(ctx).ResumeHook(ctx, in.Token, in.I); err != nil {
			return 0, err
		}
		return in.I, nil
	})
	wf := sdk.New("pokeSelf", func(ctx sdk.Context, token string) ([]int, error) {
		h := sdk.NewHook[int](ctx, sdk.HookOptions{Token: token})
		if _, err := h.Conflict(ctx); err != nil {
			return nil, err
		}
		var got []int
		for i := range payloads {
			if _, err := poke.Call(ctx, struct {
				Token string
				I     int
			}{token, i}); err != nil {
				return nil, err
			}
			v, err := h.Receive(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		return got, nil
	})
	e := newEnvWith(t, envOptions{workers: 2}, wf, poke)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "poke-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != payloads {
		t.Fatalf("got %v, %v", got, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("payload %d = %d", i, v)
		}
	}
}

func TestExternalHookPayloadsUnderLoad(t *testing.T) {
	t.Parallel()
	const payloads = 30
	tick := sdk.NewStep("tick", func(ctx context.Context, i int) (int, error) {
		time.Sleep(time.Millisecond)
		return i, nil
	})
	wf := sdk.New("collect", func(ctx sdk.Context, token string) ([]int, error) {
		h := sdk.NewHook[int](ctx, sdk.HookOptions{Token: token})
		var got []int
		i := 0
		for len(got) < payloads {
			// Keep steps running while payloads arrive from outside.
			next := h.Next(ctx)
			for !next.Done() {
				if _, err := tick.Call(ctx, i); err != nil {
					return nil, err
				}
				i++
			}
			v, err := next.Get(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		return got, nil
	})
	e := newEnvWith(t, envOptions{workers: 2}, wf, tick)
	ctx := e.ctx()
	token := "collect-" + t.Name()
	run, err := wf.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
	for i := range payloads {
		if _, err := e.client.ResumeHook(ctx, token, i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != payloads {
		t.Fatalf("got %v, %v", got, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("payload %d = %d (out of order or lost)", i, v)
		}
	}
}

func TestDeterministicAcrossReplays(t *testing.T) {
	t.Parallel()
	type values struct {
		Rand  int64
		ID    string
		Token string
		Now   time.Time
	}
	record := sdk.NewStep("record", func(ctx context.Context, v values) (values, error) { return v, nil })
	wf := sdk.New("deterministic", func(ctx sdk.Context, _ struct{}) ([2]values, error) {
		h := sdk.NewHook[int](ctx, sdk.HookOptions{})
		v := values{Rand: ctx.Rand().Int64(), ID: ctx.NewID(), Token: h.Token(), Now: ctx.Now()}
		rec, err := record.Call(ctx, v)
		if err != nil {
			return [2]values{}, err
		}
		// Forces a new invocation, which replays everything above.
		if err := sdk.Sleep(ctx, 20*time.Millisecond); err != nil {
			return [2]values{}, err
		}
		return [2]values{v, rec}, nil
	})
	e := newEnvWith(t, envOptions{knobs: []knobs.Option{knobs.WithLinger(-1)}}, wf, record)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Rand != got[1].Rand || got[0].ID != got[1].ID || got[0].Token != got[1].Token || !got[0].Now.Equal(got[1].Now) {
		t.Errorf("replayed %+v, recorded %+v", got[0], got[1])
	}
	if len(got[0].Token) != 22 || len(got[0].ID) != 26 {
		t.Errorf("token %q id %q", got[0].Token, got[0].ID)
	}
}

func TestIdempotentStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, addTen, add)
	ctx := e.ctx()
	var ids sync.Map
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := addTen.Start(ctx, e.client, 1, sdk.WithIdempotencyKey("order-42"))
			if err != nil {
				failures.Add(1)
				return
			}
			ids.Store(run.ID(), true)
		}()
	}
	wg.Wait()
	n := 0
	ids.Range(func(any, any) bool { n++; return true })
	if n != 1 || failures.Load() != 0 {
		t.Fatalf("%d runs, %d failures; want one run", n, failures.Load())
	}
	other, err := addTen.Start(ctx, e.client, 1, sdk.WithIdempotencyKey("order-43"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ids.Load(other.ID()); ok {
		t.Error("another key gave the same run")
	}
	if got, err := other.Result(ctx); err != nil || got != 11 {
		t.Errorf("result %d, %v", got, err)
	}
}

// TestWorkerShutdownLeaksNothing is not parallel: it counts goroutines.
func TestWorkerShutdownLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		lw, err := localworld.Open(localworld.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer lw.Close()
		reg := sdk.NewRegistry().MustRegister(addTen, add)
		w, err := sdk.NewWorker(sdk.WorkerConfig{World: lw, Registry: reg, Concurrency: 4, WebhookAddr: "127.0.0.1:0"}, knobs.WithPollWait(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		run, err := addTen.Start(ctx, w.Client(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := run.Result(ctx); err != nil || got != 11 {
			t.Fatalf("result %d, %v", got, err)
		}
		// Leave a run sleeping, so work is in flight at shutdown.
		sleeper := sdk.New("sleeper", func(ctx sdk.Context, _ struct{}) (int, error) { return 0, sdk.Sleep(ctx, time.Hour) })
		_ = reg.Register(sleeper)
		if _, err := sleeper.Start(ctx, w.Client(), struct{}{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Errorf("%d goroutines before, %d after shutdown:\n%s", before, after, buf[:n])
	}
}
