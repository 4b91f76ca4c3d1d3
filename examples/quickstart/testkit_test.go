package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// noLatency is the systems the steps call answering at once.
func noLatency(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// runOrder runs order 1001 through fulfilOrder on a test environment, with
// a pickup slot a day away, approving it when the run waits for approval.
// It checks the run and returns the wall time it took.
func runOrder(t testing.TB, opts ...skeintest.Option) time.Duration {
	t.Helper()
	reg := workflow.NewRegistry()
	if err := reg.Register(definitions()...); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	env := skeintest.New(t, reg, opts...)
	t0 := env.Now()
	run, err := fulfilOrder.Start(env.Context(), env.Client(), newOrder("1001", 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	s := env.WaitSuspended(run.ID())
	if s.Token() != approvalToken("1001") || len(s.Sleeps) != 0 {
		t.Fatalf("suspended on %v, want the approval hook alone", s)
	}
	env.ResumeHook(s.Token(), Approval{Approved: true, By: "dana@shop.example", Note: "looks good"})
	res, err := skeintest.Result(env, run)
	took := time.Since(began)
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, skeintest.FormatEvents(env.Events(run.ID())))
	}
	if got := mustJSON(t, res); got != wantResult {
		t.Errorf("result\n got %s\nwant %s", got, wantResult)
	}
	env.ExpectStepAttempts(run.ID(), chargeCard.Name(), 2)
	env.ExpectEvents(run.ID(), world.EventStepRetrying, world.EventHookReceived, world.EventWaitCreated,
		world.EventWaitCompleted, world.EventRunCompleted)
	if slept := env.Now().Sub(t0); slept < 24*time.Hour {
		t.Errorf("the virtual clock moved %s, want the day of the pickup sleep", slept)
	}
	return took
}

// TestQuickstartWorkflowInVirtualTime runs the quickstart's workflow with its
// retried payment, its approval and a day's sleep until the pickup slot, on
// the test kit, with the systems the steps call answering at once: it takes
// a few milliseconds (BENCHMARKS.md has the figure, from the benchmark
// below). The test's bound only tells virtual time from real time (a day's
// sleep), with room for a loaded machine: speed is the benchmark's to
// judge, not a unit test's.
func TestQuickstartWorkflowInVirtualTime(t *testing.T) {
	t.Parallel()
	stubs := []skeintest.Option{
		skeintest.StubStep(chargeCard, charge(noLatency)),
		skeintest.StubStep(reserveStock, reserve(noLatency)),
		skeintest.StubStep(shipOrder, ship(noLatency)),
	}
	best := time.Hour
	for range 3 {
		best = min(best, runOrder(t, stubs...))
	}
	t.Logf("fastest of 3 runs: %s of wall time", best)
	if best >= time.Minute {
		t.Errorf("the workflow took %s of wall time at best: its day's sleep is not virtual", best)
	}
}

// TestQuickstartStepsInVirtualTime runs the same with the registered steps,
// which simulate about 350ms of latency between them: the sleep, the
// backoff and the approval add nothing to it.
func TestQuickstartStepsInVirtualTime(t *testing.T) {
	t.Parallel()
	took := runOrder(t)
	t.Logf("with the steps' simulated latency: %s of wall time", took)
	if took > time.Minute {
		t.Errorf("took %s of wall time, want about the steps' 350ms: the sleep, backoff or approval waited in real time", took)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkQuickstartWorkflowInVirtualTime is TestQuickstartWorkflowInVirtualTime's
// run, environment included; BENCHMARKS.md has the figure.
//
//	go test -run '^$' -bench QuickstartWorkflowInVirtualTime -benchtime 200x ./examples/quickstart/
func BenchmarkQuickstartWorkflowInVirtualTime(b *testing.B) {
	stubs := []skeintest.Option{
		skeintest.StubStep(chargeCard, charge(noLatency)),
		skeintest.StubStep(reserveStock, reserve(noLatency)),
		skeintest.StubStep(shipOrder, ship(noLatency)),
	}
	for b.Loop() {
		t := &iterTB{TB: b}
		runOrder(t, stubs...)
		t.done()
	}
}

// iterTB scopes an environment to one iteration of a benchmark: its
// cleanups run when the iteration ends.
type iterTB struct {
	testing.TB
	cleanups []func()
}

func (t *iterTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *iterTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
