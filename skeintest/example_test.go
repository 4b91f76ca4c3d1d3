package skeintest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// A subscription renewal: charge the card, retrying with backoff, then
// sleep for 30 days; a person confirms the plan on a hook first.

var renewCharge = workflow.NewStep("renew-charge", func(ctx context.Context, plan string) (string, error) {
	return "", errors.New("payment gateway: 503") // the real gateway is out of reach in a test
}, workflow.StepOptions{MaxRetries: 5, Backoff: workflow.ExponentialBackoff(time.Minute, time.Hour)})

var renewal = workflow.New("renewal", func(ctx workflow.Context, user string) (string, error) {
	plan, err := workflow.NewHook[string](ctx, workflow.HookOptions{Token: "plan/" + user}).Receive(ctx)
	if err != nil {
		return "", err
	}
	receipt, err := renewCharge.Call(ctx, plan)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 30*24*time.Hour); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; renewed on %s", receipt, ctx.Now().Format(time.DateOnly)), nil
})

func renewalRegistry() *workflow.Registry {
	return workflow.NewRegistry().MustRegister(renewal, renewCharge)
}

// flakyGateway fails the first three attempts, then charges.
func flakyGateway(ctx context.Context, plan string) (string, error) {
	if m, _ := workflow.StepMetadataFrom(ctx); m.Attempt <= 3 {
		return "", fmt.Errorf("attempt %d: payment gateway: 503", m.Attempt)
	}
	return "charged for " + plan, nil
}

var jan1 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// A test starts a run, resumes its hook and reads its result; the retries'
// backoff and the 30-day sleep take no time.
func ExampleNew() {
	example(func(t testing.TB) { // in a test: t is the *testing.T
		env := skeintest.New(t, renewalRegistry(),
			skeintest.WithStartTime(jan1),
			skeintest.StubStep(renewCharge, flakyGateway))
		run, err := renewal.Start(env.Context(), env.Client(), "ada")
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		s := env.WaitSuspended(run.ID())
		fmt.Println("waiting for", s)
		env.ResumeHook(s.Token(), "gold")

		out, err := skeintest.Result(env, run)
		fmt.Println(out, err)
		fmt.Println("charge attempts:", skeintest.StepAttempts(env.Events(run.ID()), "renew-charge"))
	})
	// Output:
	// waiting for hook "plan/ada"
	// charged for gold; renewed on 2030-01-31 <nil>
	// charge attempts: 4
}

// In manual time the clock moves only on Advance, which stops at every
// timer on its way.
func ExampleWithManualTime() {
	example(func(t testing.TB) {
		env := skeintest.New(t, renewalRegistry(),
			skeintest.WithStartTime(jan1), skeintest.WithManualTime(),
			skeintest.StubStep(renewCharge, func(context.Context, string) (string, error) { return "charged", nil }))
		run, err := renewal.Start(env.Context(), env.Client(), "bob")
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		env.ResumeHook(env.WaitSuspended(run.ID()).Token(), "silver")
		fmt.Println("sleeping until", env.WaitSuspended(run.ID()).Until().Format(time.DateOnly))

		env.Advance(29 * 24 * time.Hour)
		fmt.Println(env.Now().Format(time.DateOnly), "still sleeping:", env.WaitSuspended(run.ID()).Until().Format(time.DateOnly))
		env.Advance(24 * time.Hour)
		out, err := skeintest.Result(env, run)
		fmt.Println(out, err)
	})
	// Output:
	// sleeping until 2030-01-31
	// 2030-01-30 still sleeping: 2030-01-31
	// charged; renewed on 2030-01-31 <nil>
}

// A step that fails for good fails the run; the log says what happened.
func ExampleEnv_ExpectEvents() {
	example(func(t testing.TB) {
		env := skeintest.New(t, renewalRegistry(), skeintest.WithStartTime(jan1))
		run, err := renewal.Start(env.Context(), env.Client(), "cy")
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		env.ResumeHook(env.WaitSuspended(run.ID()).Token(), "bronze")
		_, err = skeintest.Result(env, run)
		var failed *workflow.RunFailedError
		fmt.Println("failed:", errors.As(err, &failed))
		env.ExpectEvents(run.ID(), "step_retrying", "step_failed", "run_failed")
		fmt.Println("attempts:", skeintest.StepAttempts(env.Events(run.ID()), "renew-charge"))
		backoff := env.Now().Sub(jan1) // 1+2+4+8+16 minutes, ±20%
		fmt.Println("half an hour of backoff:", backoff > 24*time.Minute && backoff < 38*time.Minute)
	})
	// Output:
	// failed: true
	// attempts: 6
	// half an hour of backoff: true
}

// exampleTB stands in for a *testing.T in the examples: it runs cleanups at
// the end and turns failures into panics.
// The embedded testing.TB is nil: New calls only the methods below.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (*exampleTB) Helper()                        {}
func (e *exampleTB) Cleanup(f func())             { e.cleanups = append(e.cleanups, f) }
func (*exampleTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (*exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (*exampleTB) Logf(string, ...any)            {}

func example(body func(t testing.TB)) {
	t := &exampleTB{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	body(t)
}
