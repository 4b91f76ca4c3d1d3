package skeintest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

var (
	square = workflow.NewStep("square", func(_ context.Context, n int) (int, error) { return n * n, nil })

	// sumSquares fans out one step per number, more than the engine runs
	// inline at once, after a day's sleep.
	sumSquares = workflow.New("sum-squares", func(ctx workflow.Context, n int) (int, error) {
		if err := workflow.Sleep(ctx, 24*time.Hour); err != nil {
			return 0, err
		}
		fs := make([]workflow.Future[int], n)
		for i := range fs {
			fs[i] = square.Go(ctx, i+1)
		}
		outs, err := workflow.All(ctx, fs...)
		sum := 0
		for _, o := range outs {
			sum += o
		}
		return sum, err
	})

	// parent runs two children, each sleeping a day in its own run.
	parent = workflow.New("parent", func(ctx workflow.Context, n int) (int, error) {
		a := sumSquares.Go(ctx, n)
		b := sumSquares.Go(ctx, n+1)
		outs, err := workflow.All(ctx, a, b)
		if err != nil {
			return 0, err
		}
		return outs[0] + outs[1], nil
	})
)

// TestFanOutsAndChildRuns: steps queued beyond the inline capacity and child
// runs, each with its own timers, run in virtual time too.
func TestFanOutsAndChildRuns(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry().MustRegister(square, sumSquares, parent)
	for _, c := range []struct {
		name string
		run  func(env *skeintest.Env) (int, error)
		want int
	}{
		{"a fan-out of 40", func(env *skeintest.Env) (int, error) {
			run, err := sumSquares.Start(env.Context(), env.Client(), 40)
			if err != nil {
				return 0, err
			}
			return skeintest.Result(env, run)
		}, 22140},
		{"child runs", func(env *skeintest.Env) (int, error) {
			run, err := parent.Start(env.Context(), env.Client(), 3)
			if err != nil {
				return 0, err
			}
			return skeintest.Result(env, run)
		}, 14 + 30},
		{"child runs of a stubbed workflow", func(env *skeintest.Env) (int, error) {
			run, err := parent.Start(env.Context(), env.Client(), 3)
			if err != nil {
				return 0, err
			}
			return skeintest.Result(env, run)
		}, 3 + 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := []skeintest.Option{skeintest.WithStartTime(start)}
			if strings.Contains(c.name, "stubbed") {
				opts = append(opts, skeintest.StubWorkflow(sumSquares, func(ctx workflow.Context, n int) (int, error) {
					return n, workflow.Sleep(ctx, 24*time.Hour)
				}))
			}
			env := skeintest.New(t, reg, opts...)
			got, err := c.run(env)
			if err != nil || got != c.want {
				t.Fatalf("got %d, %v; want %d", got, err, c.want)
			}
			if env.Now().Sub(start) < 24*time.Hour {
				t.Errorf("the clock moved %s, want the day the runs sleep", env.Now().Sub(start))
			}
		})
	}
}
