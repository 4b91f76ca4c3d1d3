package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/skeinflow/skein/internal/knobs"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
)

// Saga benchmark: a run of n serial steps, each with a compensation, that
// then fails; the run asks for compensation (WithCompensateOnFailure), so
// after its failure is recorded the engine compensates the n steps, most
// recent first. Side by side, the same run with steps that declare no
// compensation (kind=plain). Each reports ms from the start to
// run_deactivated and commits per step.
//
//	go test -run '^$' -bench 'Saga' -benchtime 3x ./bench/

var errSagaEnd = errors.New("the saga's last step fails")

type sagaBench struct {
	w      *appendCounter
	client *client.Client
	saga   *workflow.Workflow[int, int]
	plain  *workflow.Workflow[int, int]
}

func newSagaBench(b *testing.B, store string) *sagaBench {
	b.Helper()
	cfg := localworld.Config{}
	if store == "durable" {
		cfg.Path = filepath.Join(b.TempDir(), "saga.db")
	}
	lw, err := localworld.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sb := &sagaBench{w: &appendCounter{World: lw}}
	undo := workflow.NewStep("undo", func(ctx context.Context, c workflow.Compensation[int, int]) (struct{}, error) {
		return struct{}{}, nil
	})
	do := workflow.WithCompensation(workflow.NewStep("do", func(ctx context.Context, i int) (int, error) { return i, nil }), undo)
	plain := workflow.NewStep("plain", func(ctx context.Context, i int) (int, error) { return i, nil })
	steps := func(s *workflow.Step[int, int]) func(ctx workflow.Context, n int) (int, error) {
		return func(ctx workflow.Context, n int) (int, error) {
			for i := range n {
				if _, err := s.Call(ctx, i); err != nil {
					return 0, err
				}
			}
			return 0, workflow.Fatal(errSagaEnd)
		}
	}
	sb.saga = workflow.New("saga", steps(do)).WithCompensateOnFailure()
	sb.plain = workflow.New("plain-saga", steps(plain)).WithCompensateOnFailure()
	reg := workflow.NewRegistry()
	if err := reg.Register(sb.saga, sb.plain, do, undo, plain); err != nil {
		b.Fatal(err)
	}
	wk, err := worker.New(worker.Config{World: sb.w, Consumer: lw, Registry: reg, Concurrency: 8}, knobs.WithPollWait(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	sb.client, err = client.New(client.Config{World: sb.w, Registry: reg}, knobs.WithResultPoll(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done; _ = lw.Close() })
	return sb
}

// run runs one run of wf with n steps to its rest and returns how many
// compensations succeeded.
func (sb *sagaBench) run(b *testing.B, wf *workflow.Workflow[int, int], n int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := wf.Start(ctx, sb.client, n)
	if err != nil {
		b.Fatal(err)
	}
	var failed *workflow.RunFailedError
	if _, err := run.Result(ctx); !errors.As(err, &failed) {
		b.Fatalf("result: %v, want the run failed", err)
	}
	info, err := sb.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		b.Fatal(err)
	}
	return info.Compensations.Succeeded
}

func BenchmarkSaga(b *testing.B) {
	for _, store := range []string{"memory", "durable"} {
		for _, n := range []int{10, 100} {
			for _, kind := range []string{"plain", "saga"} {
				b.Run(fmt.Sprintf("%s/n=%d/kind=%s", store, n, kind), func(b *testing.B) {
					sb := newSagaBench(b, store)
					wf, want := sb.plain, 0
					if kind == "saga" {
						wf, want = sb.saga, n
					}
					sb.run(b, wf, 2) // warm up
					commits := 0
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						runtime.GC()
						b.StartTimer()
						before := sb.w.commits()
						if got := sb.run(b, wf, n); got != want {
							b.Fatalf("%d compensations, want %d", got, want)
						}
						commits += sb.w.commits() - before
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/run")
					b.ReportMetric(float64(commits)/float64(b.N)/float64(n), "commits/step")
				})
			}
		}
	}
}
