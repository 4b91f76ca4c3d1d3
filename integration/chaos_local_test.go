//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// The environment of a local chaos worker (the test binary run again by
// TestChaosLocalWorld).
const (
	chaosWorkerEnv = "SKEIN_CHAOS_WORKER" // the store's path: run as a worker
	chaosPlanEnv   = "SKEIN_CHAOS_PLAN"   // the plan every run follows, JSON (Key set per run)
	chaosStartEnv  = "SKEIN_CHAOS_START"  // how many runs must exist
)

// chaosLocalKey is the idempotency key of the local run with key k.
func chaosLocalKey(k int) string { return "chaos-" + strconv.Itoa(k) }

// TestChaosLocalWorld runs the mixed workflow (demo.Chaos) on a durable
// local store in worker processes that are SIGKILLed at random, 30 times or
// more (SKEIN_CHAOS_KILLS) and for at least SKEIN_CHAOS_DURATION, each
// restart starting SKEIN_CHAOS_RUNS / SKEIN_CHAOS_KILLS more runs (default
// 60 / 30), then lets a last worker finish them and checks every run's log
// (each run compensates its steps at its end: ChaosPlan.Compensate)
// and every step body against the invariants (checkChaos).
func TestChaosLocalWorld(t *testing.T) {
	t.Parallel()
	seed := chaosSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0xc4a05))
	kills := envInt(t, chaosKillsEnv, 30)
	duration := envDuration(t, chaosDurationEnv, 0)
	runs := envInt(t, chaosRunsEnv, 60)
	perRestart := max(1, (runs+kills-1)/kills)
	sink := newChaosSink(t)
	path := filepath.Join(t.TempDir(), "chaos.db")
	plan := demo.ChaosPlan{Sink: sink.URL(), Serial: 3, Fan: 6, ChildSteps: 2, Work: 150 * time.Millisecond, Sleep: 300 * time.Millisecond,
		Compensate: true}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			out := logs.String()
			if len(out) > 32<<10 {
				out = "...\n" + out[len(out)-32<<10:]
			}
			t.Logf("worker output:\n%s", out)
		}
	})
	start := func(n int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), chaosWorkerEnv+"="+path, chaosPlanEnv+"="+string(planJSON), chaosStartEnv+"="+strconv.Itoa(n))
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	began := time.Now()
	n, killed, finished := 0, 0, 0
	for killed < kills || time.Since(began) < duration {
		n += perRestart // (a worker that finishes before its kill gets more work next time)
		cmd := start(n)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			// Done with every run before the kill came: start more.
			if err != nil {
				t.Fatalf("worker exited: %v", err)
			}
			finished++
			continue
		case <-time.After(300*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))):
		}
		_ = cmd.Process.Kill()
		<-exited
		sink.died(cmd.Process.Pid, time.Now())
		killed++
	}
	// The last worker, left alone, must finish every run.
	cmd := start(n)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	limit := 2*time.Minute + duration/10
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the last worker: %v", err)
		}
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("runs still unfinished %s after the last kill", limit)
	}

	w, err := localworld.Open(localworld.Config{Path: path, RepairTornTail: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	all, err := allRuns(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]demo.ChaosPlan{}
	for _, r := range all {
		if r.WorkflowName == demo.Chaos.Name() {
			p := plan
			p.Key = strings.TrimPrefix(r.IdempotencyKey, "chaos-")
			plans[r.RunID] = p
		}
	}
	if len(plans) != n {
		t.Errorf("%d chaos runs in the store, want %d", len(plans), n)
	}
	violations, tally, err := checkChaos(ctx, w, sink, plans)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
	logRunEvidence(ctx, t, w, violations)
	if tally.Compensated == 0 {
		t.Error("no step was compensated")
	}
	t.Logf("local world: %d runs (%d children), %d steps, %d step bodies, %d retries, %d hook payloads, %d compensations; "+
		"%d SIGKILLs, %d workers that finished before their kill; %d violations; %s",
		tally.Parents, tally.Children, tally.Steps, tally.Bodies, tally.Retried, tally.HookPayloads, tally.Compensated,
		killed, finished, len(violations), time.Since(began).Round(time.Second))
}

// chaosWorker is a local chaos worker process: it opens the store, starts
// the runs that do not exist yet (idempotency keys chaos-0 up), works on
// every run, resumes each run's hook once or twice at once, and exits 0
// when every run has ended. It is meant to be killed.
func chaosWorker() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := runChaosWorker(logger); err != nil {
		logger.Error("chaos worker", "err", err)
		return 1
	}
	return 0
}

func runChaosWorker(logger *slog.Logger) error {
	var plan demo.ChaosPlan
	if err := json.Unmarshal([]byte(os.Getenv(chaosPlanEnv)), &plan); err != nil {
		return fmt.Errorf("%s: %w", chaosPlanEnv, err)
	}
	n, err := strconv.Atoi(os.Getenv(chaosStartEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", chaosStartEnv, err)
	}
	var w *localworld.World
	for limit := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		w, err = localworld.Open(localworld.Config{Path: os.Getenv(chaosWorkerEnv), RepairTornTail: true})
		if err == nil {
			break
		}
		if !errors.Is(err, localworld.ErrLocked) || time.Now().After(limit) {
			return err
		}
	}
	defer w.Close()
	reg, err := demo.Registry()
	if err != nil {
		return err
	}
	worker, err := worker.New(worker.Config{
		World: w, Registry: reg, Concurrency: 8, Logger: logger, Visibility: 3 * time.Second,
		Engine: worker.EngineOptions{InlineConcurrency: 4, StepLeaseTTL: 2 * time.Second, RunLeaseTTL: 2 * time.Second},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = worker.Run(ctx) })
	defer cancel()
	c := worker.Client()
	for k := range n {
		p := plan
		p.Key = strconv.Itoa(k)
		if _, err := demo.Chaos.Start(ctx, c, p, client.WithIdempotencyKey(chaosLocalKey(k))); err != nil {
			return fmt.Errorf("start %d: %w", k, err)
		}
	}
	resumed := map[int]bool{}
	logf := func(format string, args ...any) { logger.Warn(fmt.Sprintf(format, args...)) }
	for {
		done, err := chaosPass(ctx, c, n, resumed, logf)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// chaosPass resumes the hooks that wait and not resumed yet by this
// process (run k's once when k is even, twice at once when odd: see
// resumeChaosHook, whose errors it logs) and reports whether every run has
// ended.
func chaosPass(ctx context.Context, c *client.Client, n int, resumed map[int]bool, logf func(string, ...any)) (bool, error) {
	for k := range n {
		if resumed[k] {
			continue
		}
		h, err := c.GetHookByToken(ctx, demo.ChaosHookToken(strconv.Itoa(k)))
		if err != nil {
			if !errors.Is(err, world.ErrNotFound) {
				logf("run with key %d: GetHookByToken: %v", k, err)
			}
			continue
		}
		resumed[k] = true
		if err := resumeChaosHook(ctx, c, h.RunID, strconv.Itoa(k), 1+k%2, logf, func(string, ...any) {}); err != nil {
			return false, err
		}
	}
	runs, err := allRuns(ctx, sdk.ClientWorld(c))
	if err != nil {
		return false, err
	}
	parents := 0
	for _, r := range runs {
		if !r.Status.Terminal() {
			return false, nil
		}
		if r.WorkflowName == demo.Chaos.Name() {
			parents++
		}
	}
	return parents == n, nil
}
