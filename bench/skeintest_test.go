package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// The test kit: what a user's test of a workflow with long timers costs in
// wall time, environment included (New, Start, Result, shutdown).
//
//	go test -run '^$' -bench 'Skeintest' -benchtime 200x ./bench/

// backoffStep fails until the attempt its input names.
var backoffStep = workflow.NewStep("bench-backoff", func(ctx context.Context, succeedAt int) (int, error) {
	m, _ := workflow.StepMetadataFrom(ctx)
	if m.Attempt < succeedAt {
		return 0, fmt.Errorf("attempt %d: not yet", m.Attempt)
	}
	return m.Attempt, nil
}, workflow.StepOptions{MaxRetries: 5, Backoff: workflow.ExponentialBackoff(time.Minute, time.Hour)})

// monthlong sleeps 30 days, then runs backoffStep to its 6th attempt.
var monthlong = workflow.New("bench-monthlong", func(ctx workflow.Context, succeedAt int) (int, error) {
	if err := workflow.Sleep(ctx, 30*24*time.Hour); err != nil {
		return 0, err
	}
	return backoffStep.Call(ctx, succeedAt)
})

// iterTB scopes an environment to one iteration: its cleanups run when the
// iteration ends, not when the benchmark does.
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

func BenchmarkSkeintest(b *testing.B) {
	reg := workflow.NewRegistry().MustRegister(monthlong, backoffStep)
	b.Run("Sleep30dRetry5", func(b *testing.B) {
		for b.Loop() {
			t := &iterTB{TB: b}
			env := skeintest.New(t, reg)
			run, err := monthlong.Start(env.Context(), env.Client(), 6)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := skeintest.Result(env, run); err != nil || got != 6 {
				b.Fatalf("result %d, %v", got, err)
			}
			t.done()
		}
	})
}
