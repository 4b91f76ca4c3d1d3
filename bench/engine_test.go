package bench

import (
	"context"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Engine benchmarks: serial no-op steps and fan-outs through the whole stack
// (client, queue, worker, engine) on the embedded World, in memory and on a
// file (fsync per commit) in each format.
//
//	go test -run '^$' -bench 'Engine' -benchtime 3x ./bench/

// appendCounter counts commits.
type appendCounter struct {
	*localworld.World
	mu sync.Mutex
	n  int
}

func (c *appendCounter) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.World.Append(ctx, p)
}

func (c *appendCounter) commits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// engineBench is one World with a worker running the benchmark workflows.
type engineBench struct {
	w      *appendCounter
	client *client.Client
	seq    *workflow.Workflow[int, int]
	fan    *workflow.Workflow[int, int]
	stamps []time.Time // written by the noop step: stamps[i] = when step i ran
	stop   func()
}

// engineStores are the stores the engine benchmarks run on: memory, a
// durable file (the log format).
var engineStores = []string{"memory", "durable"}

func newEngineBench(b *testing.B, store string) *engineBench {
	b.Helper()
	cfg := localworld.Config{}
	switch store {
	case "durable":
		cfg.Path = filepath.Join(b.TempDir(), "engine.db")
	}
	lw, err := localworld.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	eb := &engineBench{w: &appendCounter{World: lw}}
	noop := workflow.NewStep("noop", func(ctx context.Context, i int) (int, error) {
		if i >= 0 && i < len(eb.stamps) {
			eb.stamps[i] = time.Now()
		}
		return i, nil
	})
	eb.seq = workflow.New("seq", func(ctx workflow.Context, n int) (int, error) {
		for i := range n {
			if _, err := noop.Call(ctx, i); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	eb.fan = workflow.New("fanout", func(ctx workflow.Context, n int) (int, error) {
		fs := make([]workflow.Future[int], n)
		for i := range fs {
			fs[i] = noop.Go(ctx, -1)
		}
		_, err := workflow.All(ctx, fs...)
		return n, err
	})
	reg := workflow.NewRegistry()
	if err := reg.Register(eb.seq, eb.fan, noop); err != nil {
		b.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: eb.w, Consumer: lw, Registry: reg, Concurrency: 8}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	eb.client, err = client.New(client.Config{World: eb.w, Registry: reg}, knobs.WithResultPoll(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	eb.stop = func() { cancel(); <-done; _ = lw.Close() }
	b.Cleanup(eb.stop)
	return eb
}

func (eb *engineBench) run(b *testing.B, wf *workflow.Workflow[int, int], n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := wf.Start(ctx, eb.client, n)
	if err != nil {
		b.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != n {
		b.Fatalf("result %d, %v", got, err)
	}
}

func meanGap(stamps []time.Time, from, to int) time.Duration {
	return stamps[to].Sub(stamps[from]) / time.Duration(to-from)
}

// BenchmarkEngineSeq runs a workflow of n serial no-op steps. It reports
// ms/run, commits per step (goal: 1), the process's CPU time per step
// (cpu-µs/step, as BenchmarkEngineFanout), and for n >= 20 the mean step-to-step
// gap over the first and the last ten steps and their ratio (goal: under
// 1.2, flat: the step index does not slow a step down). The mean is noisy on
// a shared machine; bench/peers' BenchmarkFlat1000 reports per-step medians
// over runs (BENCHMARKS.md, "engine", explains the two causes of the growth
// once measured here and how they were fixed).
func BenchmarkEngineSeq(b *testing.B) {
	for _, store := range engineStores {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", store, n), func(b *testing.B) {
				eb := newEngineBench(b, store)
				eb.run(b, eb.seq, 1) // warm up
				var firstGap, lastGap time.Duration
				commits := 0
				b.ResetTimer()
				var cpu time.Duration
				for range b.N {
					b.StopTimer()
					eb.stamps = make([]time.Time, n)
					runtime.GC() // each run starts from a collected heap
					b.StartTimer()
					before, t0 := eb.w.commits(), cpuTime()
					eb.run(b, eb.seq, n)
					cpu += cpuTime() - t0
					commits += eb.w.commits() - before - 1 // minus run_created
					if n >= 20 {
						firstGap += meanGap(eb.stamps, 0, 10)
						lastGap += meanGap(eb.stamps, n-11, n-1)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
				b.ReportMetric(float64(commits)/float64(b.N*n), "commits/step")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/step")
				if n >= 20 {
					b.ReportMetric(float64(firstGap.Microseconds())/float64(b.N), "gap-first-µs")
					b.ReportMetric(float64(lastGap.Microseconds())/float64(b.N), "gap-last-µs")
					b.ReportMetric(float64(lastGap)/float64(firstGap), "gap-ratio")
				}
			})
		}
	}
}

// BenchmarkEngineFanout runs a workflow starting n no-op steps at once and
// awaiting them all (InlineConcurrency 16: the excess is queued). µs/step
// is the run's time over n: flat from 100 to 5,000 steps when a wide
// fan-out costs what a narrow one does per step. cpu-µs/step is the CPU
// time the process used over n (all its goroutines: the worker's eight,
// the client's polls; zero where getrusage is not available), less
// sensitive than the wall time to the queue's and the sessions' waits and
// to the neighbours on a shared machine. appends/run counts the Appends
// called, refused ones included.
func BenchmarkEngineFanout(b *testing.B) {
	for _, store := range engineStores {
		for _, n := range []int{10, 100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/n=%d", store, n), func(b *testing.B) {
				eb := newEngineBench(b, store)
				eb.run(b, eb.fan, 1)
				b.ResetTimer()
				cpu, appends := cpuTime(), eb.w.commits()
				for range b.N {
					eb.run(b, eb.fan, n)
				}
				cpu, appends = cpuTime()-cpu, eb.w.commits()-appends
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
				b.ReportMetric(float64(appends)/float64(b.N), "appends/run")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/step")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/step")
			})
		}
	}
}
