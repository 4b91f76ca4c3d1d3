// Package peers benchmarks Skein beside other durable-workflow engines for Go
// on the same scenarios, in the same process and the same run.
//
// It lives in its own module so that the main Skein module never depends on a
// peer (DBOS Transact and its SQLite driver). The module replaces
// github.com/skeinflow/skein with ../.. so a Skein engine can be added here
// beside the peers.
//
// Every engine implements [Runner]. The scenarios in [Scenarios] drive a
// Runner and do all the timing and metric reporting themselves, so every engine
// is measured by exactly the same code; an engine only says how to run one
// workflow of each shape. To add an engine, write an [Engine] whose Open
// returns a Runner and list it in [Engines].
package peers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Runner runs single workflows of each benchmark shape on one engine instance
// (one fresh store). Calls are made one at a time, never concurrently. Each
// method starts one workflow run, waits for its result, checks it, and returns
// only when the run has completed.
type Runner interface {
	// Seq runs one workflow that calls n no-op steps one after the other,
	// each awaited before the next starts. If stamps is not nil (it then has
	// length n), the body of step i stores time.Now() in stamps[i] when it
	// runs, so the harness can measure the step-to-step gap.
	Seq(ctx context.Context, n int, stamps []time.Time) error

	// Fanout runs one workflow that starts n no-op steps concurrently, the
	// way the engine documents parallel steps, and waits for all of them.
	Fanout(ctx context.Context, n int) error

	// SleepWake runs one workflow that durably sleeps for d and returns the
	// lateness of its wake-up: the wall-clock time at which workflow code
	// after the sleep starts running, minus (the wall-clock time just before
	// the sleep call + d). Negative means early.
	SleepWake(ctx context.Context, d time.Duration) (time.Duration, error)

	// Close shuts the engine down and releases its store.
	Close() error
}

// Engine is one engine configuration under test; its Name is the name of
// the sub-benchmark (BenchmarkSeq1000/<Name>).
type Engine struct {
	Name string
	// Open starts a fresh engine instance whose store lives in dir (an empty
	// directory), ready to run workflows. Its cost is not timed.
	Open func(ctx context.Context, dir string) (Runner, error)
}

// CommitCounter is implemented by a Runner that counts its store's writes:
// appends is the number of commits to run logs so far, writes the number of
// all store writes (commits, queue and lease writes). The scenarios then
// report them per run.
type CommitCounter interface {
	Commits() (appends, writes int64)
}

// Describer is implemented by a Runner that can say what store it runs on
// (format, durability); Bench logs it once per engine.
type Describer interface {
	Describe() string
}

// Engines lists every engine configuration benchmarked, in report order:
// each Skein configuration next to the DBOS one of the same durability, so
// that the two run close together in time on a noisy machine.
func Engines() []Engine {
	return []Engine{
		SkeinEngine(SkeinDurable),
		DBOSEngine(SQLiteFull),
		SkeinEngine(SkeinMemory),
		DBOSEngine(SQLiteNormal),
	}
}

// Scenario is one benchmark shape; Run measures it on an open Runner.
type Scenario struct {
	Name string // benchmark name without the "Benchmark" prefix, e.g. "Seq1000"
	Run  func(b *testing.B, r Runner)
}

// Scenarios lists the benchmark shapes, in report order.
func Scenarios() []Scenario {
	return []Scenario{
		SeqScenario(10),
		SeqScenario(100),
		SeqScenario(1000),
		FanoutScenario(10),
		FanoutScenario(100),
		SleepWakeScenario(time.Second),
	}
}

// Bench runs scenario s as one sub-benchmark per engine. Each sub-benchmark
// opens the engine on a fresh directory from b.TempDir(), runs one untimed
// warm-up workflow (a one-step Seq), and then lets s time b.N workflow runs.
func Bench(b *testing.B, s Scenario) {
	for _, e := range Engines() {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			r, err := e.Open(ctx, b.TempDir())
			if err != nil {
				b.Fatalf("open %s: %v", e.Name, err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					b.Errorf("close %s: %v", e.Name, err)
				}
			}()
			if err := r.Seq(ctx, 1, nil); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
			if d, ok := r.(Describer); ok {
				if _, seen := described.LoadOrStore(e.Name, true); !seen {
					b.Logf("%s: %s", e.Name, d.Describe())
				}
			}
			s.Run(b, r)
		})
	}
}

// described holds the engines whose Describe line was logged.
var described sync.Map

// commitMeter reports a CommitCounter's writes per run.
type commitMeter struct {
	c               CommitCounter
	appends, writes int64
}

func startCommits(r Runner) commitMeter {
	c, ok := r.(CommitCounter)
	if !ok {
		return commitMeter{}
	}
	a, w := c.Commits()
	return commitMeter{c: c, appends: a, writes: w}
}

// report reports appends/run and writes/run over runs runs, and returns
// appends per run (0 without a CommitCounter).
func (m commitMeter) report(b *testing.B, runs int) float64 {
	if m.c == nil || runs == 0 {
		return 0
	}
	a, w := m.c.Commits()
	perRun := float64(a-m.appends) / float64(runs)
	b.ReportMetric(perRun, "appends/run")
	b.ReportMetric(float64(w-m.writes)/float64(runs), "writes/run")
	return perRun
}

// SeqScenario measures one workflow of n serial no-op steps per iteration.
// Metrics: ms/run, µs/step, and for n >= 20 the mean gap between the starts
// of consecutive step bodies over the first ten steps and over the last ten
// (gap-first10-µs, gap-last10-µs) and their ratio (gap-ratio, flat = 1).
// For a CommitCounter also appends/run, writes/run and commits/step: the
// appends of a run beyond the two every run has whatever its length (its
// creation by the client and its first commit, run_started with the first
// step), per step; one commit per serial step gives exactly 1.
func SeqScenario(n int) Scenario {
	return Scenario{
		Name: fmt.Sprintf("Seq%d", n),
		Run: func(b *testing.B, r Runner) {
			ctx := context.Background()
			stamps := make([]time.Time, n)
			var first, last time.Duration
			runs := 0
			commits := startCommits(r)
			start := time.Now()
			for b.Loop() {
				clear(stamps)
				if err := r.Seq(ctx, n, stamps); err != nil {
					b.Fatal(err)
				}
				if n >= 20 {
					first += meanGap(stamps[:11])
					last += meanGap(stamps[n-11:])
				}
				runs++
			}
			total := time.Since(start)
			b.ReportMetric(ms(total)/float64(runs), "ms/run")
			b.ReportMetric(float64(total.Microseconds())/float64(runs*n), "µs/step")
			if a := commits.report(b, runs); a > 0 {
				b.ReportMetric((a-2)/float64(n), "commits/step")
			}
			if n >= 20 {
				f := float64(first.Microseconds()) / float64(runs)
				l := float64(last.Microseconds()) / float64(runs)
				b.ReportMetric(f, "gap-first10-µs")
				b.ReportMetric(l, "gap-last10-µs")
				if f > 0 {
					b.ReportMetric(l/f, "gap-ratio")
				}
			}
		},
	}
}

// FanoutScenario measures one workflow fanning out n concurrent no-op steps
// and awaiting them all, per iteration. Metric: ms/run.
func FanoutScenario(n int) Scenario {
	return Scenario{
		Name: fmt.Sprintf("Fanout%d", n),
		Run: func(b *testing.B, r Runner) {
			ctx := context.Background()
			runs := 0
			commits := startCommits(r)
			start := time.Now()
			for b.Loop() {
				if err := r.Fanout(ctx, n); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			b.ReportMetric(ms(time.Since(start))/float64(runs), "ms/run")
			commits.report(b, runs)
		},
	}
}

// SleepWakeScenario measures one workflow durably sleeping d per iteration.
// Metrics: ms/run (start to result, the sleep included), over-ms (ms/run
// minus d: what the whole run costs beyond the sleep, i.e. start, checkpoint,
// wake-up and completion), late-ms (mean wake-up lateness as defined by
// Runner.SleepWake) and late-max-ms.
func SleepWakeScenario(d time.Duration) Scenario {
	return Scenario{
		Name: "SleepWake" + d.String(),
		Run: func(b *testing.B, r Runner) {
			ctx := context.Background()
			var sum, worst time.Duration
			runs := 0
			commits := startCommits(r)
			start := time.Now()
			for b.Loop() {
				late, err := r.SleepWake(ctx, d)
				if err != nil {
					b.Fatal(err)
				}
				sum += late
				if runs == 0 || late > worst {
					worst = late
				}
				runs++
			}
			perRun := ms(time.Since(start)) / float64(runs)
			b.ReportMetric(perRun, "ms/run")
			b.ReportMetric(perRun-ms(d), "over-ms")
			b.ReportMetric(ms(sum)/float64(runs), "late-ms")
			b.ReportMetric(ms(worst), "late-max-ms")
			commits.report(b, runs)
		},
	}
}

// meanGap is the mean time between consecutive stamps.
func meanGap(stamps []time.Time) time.Duration {
	if len(stamps) < 2 {
		return 0
	}
	return stamps[len(stamps)-1].Sub(stamps[0]) / time.Duration(len(stamps)-1)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
