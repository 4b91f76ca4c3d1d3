package peers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkFlat1000 measures how flat the step-to-step gap of a 1000-step
// serial run is, robustly: each iteration is one run, and over all the runs
// of a sub-benchmark it reports
//
//   - gap-ratio-mean: the flatness ratio, the mean gap over steps 991-1000
//     divided by the mean gap over steps 1-10, per run, median over runs;
//   - gap-ratio-median: the same with the median gap of each ten, per run,
//     median over runs (a single slow step no longer moves it);
//   - gap-ratio-pooled: for each step index the median gap over all runs,
//     then the mean of those over steps 991-1000 divided by the mean over
//     steps 1-10 (noise from other processes falls on different steps in
//     different runs and is filtered out);
//   - gap-ratio-warm: as pooled, but against steps 101-110 (steps 1-10 are
//     also the warm-up of each run);
//   - spike-µs: the largest pooled gap minus the pooled median gap, and
//     spike-at, its step index: a pause that recurs at the same step in
//     every run (a per-run structure being copied as it grows).
//
// Run with -benchtime 9x or more:
//
//	go test -run '^$' -bench Flat1000 -benchtime 9x -count 1
func BenchmarkFlat1000(b *testing.B) {
	const n = 1000
	for _, e := range Engines() {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			r, err := e.Open(ctx, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					b.Error(err)
				}
			}()
			if err := r.Seq(ctx, 1, nil); err != nil {
				b.Fatal(err)
			}
			var runs [][]time.Duration
			for b.Loop() {
				stamps := make([]time.Time, n)
				if err := r.Seq(ctx, n, stamps); err != nil {
					b.Fatal(err)
				}
				runs = append(runs, gaps(stamps))
			}
			f := FlatnessOf(runs)
			b.ReportMetric(f.MeanRatio, "gap-ratio-mean")
			b.ReportMetric(f.MedianRatio, "gap-ratio-median")
			b.ReportMetric(f.PooledRatio, "gap-ratio-pooled")
			b.ReportMetric(f.WarmRatio, "gap-ratio-warm")
			b.ReportMetric(float64(f.First.Microseconds()), "gap-first10-µs")
			b.ReportMetric(float64(f.Last.Microseconds()), "gap-last10-µs")
			b.ReportMetric(float64(f.Spike.Microseconds()), "spike-µs")
			b.ReportMetric(float64(f.SpikeAt), "spike-at")
			b.ReportMetric(float64(len(runs)), "runs")
		})
	}
}

// gaps returns the step-to-step gaps: gaps[k] = stamps[k+1] - stamps[k].
func gaps(stamps []time.Time) []time.Duration {
	out := make([]time.Duration, len(stamps)-1)
	for k := range out {
		out[k] = stamps[k+1].Sub(stamps[k])
	}
	return out
}

// Flatness summarizes the step gaps of several runs of one length (see
// BenchmarkFlat1000): First and Last are the pooled mean gaps over steps
// 1-10 and 991-1000 (the last ten gaps).
type Flatness struct {
	MeanRatio, MedianRatio, PooledRatio, WarmRatio float64
	First, Last                                    time.Duration
	Spike                                          time.Duration
	SpikeAt                                        int
}

// FlatnessOf computes the flatness measures of runs, each the gaps of one
// run, all of one length of at least 120.
func FlatnessOf(runs [][]time.Duration) Flatness {
	var f Flatness
	if len(runs) == 0 || len(runs[0]) < 120 {
		return f
	}
	m := len(runs[0])
	first, last, warm := [2]int{0, 10}, [2]int{m - 10, m}, [2]int{100, 110}
	var meanRatios, medianRatios []float64
	for _, g := range runs {
		meanRatios = append(meanRatios, ratio(meanOf(g[last[0]:last[1]]), meanOf(g[first[0]:first[1]])))
		medianRatios = append(medianRatios, ratio(medianOf(g[last[0]:last[1]]), medianOf(g[first[0]:first[1]])))
	}
	pooled := make([]time.Duration, m)
	col := make([]time.Duration, len(runs))
	for k := range pooled {
		for i, g := range runs {
			col[i] = g[k]
		}
		pooled[k] = medianOf(col)
	}
	f.MeanRatio = medianFloat(meanRatios)
	f.MedianRatio = medianFloat(medianRatios)
	f.First = meanOf(pooled[first[0]:first[1]])
	f.Last = meanOf(pooled[last[0]:last[1]])
	f.PooledRatio = ratio(f.Last, f.First)
	f.WarmRatio = ratio(f.Last, meanOf(pooled[warm[0]:warm[1]]))
	typical := medianOf(pooled)
	for k, d := range pooled {
		if d-typical > f.Spike {
			f.Spike, f.SpikeAt = d-typical, k
		}
	}
	return f
}

func (f Flatness) String() string {
	return fmt.Sprintf("ratio mean %.2f median %.2f pooled %.2f warm %.2f; pooled first10 %v last10 %v; spike %v at gap %d",
		f.MeanRatio, f.MedianRatio, f.PooledRatio, f.WarmRatio, f.First, f.Last, f.Spike, f.SpikeAt)
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func meanOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestFlatnessOf(t *testing.T) {
	const m = 999
	var runs [][]time.Duration
	for r := range 5 {
		g := make([]time.Duration, m)
		for k := range g {
			g[k] = 50 * time.Microsecond
		}
		g[500] = 250 * time.Microsecond     // a pause at the same step in every run
		g[(r*97)%m] = 10 * time.Millisecond // noise at a different step in each run
		runs = append(runs, g)
	}
	f := FlatnessOf(runs)
	if f.PooledRatio != 1 || f.WarmRatio != 1 || f.MedianRatio != 1 {
		t.Errorf("flat gaps: %v", f)
	}
	if f.SpikeAt != 500 || f.Spike != 200*time.Microsecond {
		t.Errorf("spike: %v", f)
	}
}
