package skeintest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ testing.TB = testing.TB(nil)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// flaky fails until its attempt reaches the input, with exponential backoff
// from one minute.
var flaky = workflow.NewStep("flaky", func(ctx context.Context, succeedAt int) (int, error) {
	m, _ := workflow.StepMetadataFrom(ctx)
	if m.Attempt < succeedAt {
		return 0, fmt.Errorf("attempt %d: not yet", m.Attempt)
	}
	return m.Attempt, nil
}, workflow.StepOptions{MaxRetries: 5, Backoff: workflow.ExponentialBackoff(time.Minute, time.Hour)})

// patient sleeps for 30 days, then calls flaky, which succeeds at its 6th
// attempt (5 retries), and returns the attempt and the time it woke.
var patient = workflow.New("patient", func(ctx workflow.Context, succeedAt int) (string, error) {
	if err := workflow.Sleep(ctx, 30*24*time.Hour); err != nil {
		return "", err
	}
	woke := ctx.Now()
	attempt, err := flaky.Call(ctx, succeedAt)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("woke %s, attempt %d", woke.UTC().Format(time.DateOnly), attempt), nil
})

func registry(t testing.TB) *workflow.Registry {
	t.Helper()
	reg := workflow.NewRegistry()
	if err := reg.Register(patient, flaky, approval, notify); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestLongSleepAndRetriesTakeNoTime(t *testing.T) {
	t.Parallel()
	began := time.Now()
	env := skeintest.New(t, registry(t), skeintest.WithStartTime(start))
	run, err := patient.Start(env.Context(), env.Client(), 6)
	if err != nil {
		t.Fatal(err)
	}
	got, err := skeintest.Result(env, run)
	if err != nil {
		t.Fatalf("result: %v\n%s", err, skeintest.FormatEvents(env.Events(run.ID())))
	}
	took := time.Since(began)
	if want := "woke 2030-01-31, attempt 6"; got != want {
		t.Errorf("result %q, want %q", got, want)
	}
	env.ExpectStepAttempts(run.ID(), "flaky", 6)
	env.ExpectEvents(run.ID(), world.EventWaitCreated, world.EventWaitCompleted,
		world.EventStepRetrying, world.EventStepRetrying, world.EventStepRetrying, world.EventStepRetrying, world.EventStepRetrying,
		world.EventStepCompleted, world.EventRunCompleted)
	// 30 days, then backoffs of about 1+2+4+8+16 minutes (±20%).
	if elapsed := env.Now().Sub(start); elapsed < 30*24*time.Hour+24*time.Minute || elapsed > 30*24*time.Hour+40*time.Minute {
		t.Errorf("virtual time went by %s, want 30 days and about 31 minutes", elapsed)
	}
	t.Logf("a 30-day sleep and 5 retries took %s of wall time", took)
	// Virtual time: a real wait would take 30 days. The bound holds on a
	// busy machine (the run's own work takes milliseconds there).
	if took > 20*time.Second {
		t.Errorf("took %s of wall time, want milliseconds", took)
	}
}

// Decision is what an approver sends.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// notify stands for a call to another system (a mail to the approver).
var notify = workflow.NewStep("notify", func(_ context.Context, who string) (string, error) {
	return "", errors.New("the mail server is not reachable from a test")
}, workflow.StepOptions{MaxRetries: workflow.NoRetries})

// approval notifies the approver and waits two days for a decision on the
// hook "approve/<id>"; without one it expires.
var approval = workflow.New("approval", func(ctx workflow.Context, id string) (string, error) {
	if _, err := notify.Call(ctx, "approver@example.com"); err != nil {
		return "", err
	}
	hook := workflow.NewHook[Decision](ctx, workflow.HookOptions{Token: "approve/" + id})
	decision := hook.Next(ctx)
	timeout := workflow.NewTimer(ctx, 48*time.Hour)
	if workflow.Select(ctx, decision, timeout) == 1 {
		return "expired at " + ctx.Now().UTC().Format(time.DateTime), nil
	}
	d, err := decision.Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("approved=%v by %s", d.Approved, d.By), nil
})

func stubNotify(sent *atomic.Int32) skeintest.Option {
	return skeintest.StubStep(notify, func(_ context.Context, who string) (string, error) {
		sent.Add(1)
		return "sent to " + who, nil
	})
}

func TestHookResumedBeforeTimeout(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	env := skeintest.New(t, registry(t), skeintest.WithStartTime(start), skeintest.WithManualTime(), stubNotify(&sent))
	run, err := approval.Start(env.Context(), env.Client(), "7")
	if err != nil {
		t.Fatal(err)
	}
	s := env.WaitSuspended(run.ID())
	if s.Token() != "approve/7" || !s.Until().Equal(start.Add(48*time.Hour)) || len(s.Hooks) != 1 || len(s.Sleeps) != 1 {
		t.Fatalf("suspension %v, want the hook approve/7 and a sleep until %s", s, start.Add(48*time.Hour))
	}
	env.Advance(47 * time.Hour)
	env.ExpectStatus(run.ID(), world.RunStatusRunning)
	env.ResumeHook(s.Token(), Decision{Approved: true, By: "dana"})
	got, err := skeintest.Result(env, run)
	if err != nil || got != "approved=true by dana" {
		t.Fatalf("result %q, %v", got, err)
	}
	if !env.Now().Equal(start.Add(47 * time.Hour)) {
		t.Errorf("manual clock at %s, want %s", env.Now(), start.Add(47*time.Hour))
	}
	if sent.Load() != 1 {
		t.Errorf("the stub ran %d times, want 1", sent.Load())
	}
}

func TestHookTimesOutInAutomaticTime(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	env := skeintest.New(t, registry(t), skeintest.WithStartTime(start), stubNotify(&sent))
	run, err := approval.Start(env.Context(), env.Client(), "8")
	if err != nil {
		t.Fatal(err)
	}
	got, err := skeintest.Result(env, run)
	if want := "expired at 2030-01-03 00:00:00"; err != nil || got != want {
		t.Fatalf("result %q, %v; want %q", got, err, want)
	}
}

func TestStubLeavesRegistryAlone(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	var sent atomic.Int32
	stubbed := skeintest.New(t, reg, skeintest.WithStartTime(start), stubNotify(&sent))
	plain := skeintest.New(t, reg, skeintest.WithStartTime(start))
	for _, env := range []*skeintest.Env{stubbed, plain} {
		run, err := approval.Start(env.Context(), env.Client(), "9")
		if err != nil {
			t.Fatal(err)
		}
		_, err = skeintest.Result(env, run)
		if env == stubbed && err != nil {
			t.Errorf("stubbed: %v", err)
		}
		var failed *workflow.RunFailedError
		if env == plain && !errors.As(err, &failed) {
			t.Errorf("without the stub the real step ran and should fail the run: %v", err)
		}
	}
	if sent.Load() != 1 {
		t.Errorf("the stub ran %d times, want 1", sent.Load())
	}
}

// TestHookResumedInAutomaticTime: the clock skips only while the test waits
// for a run, so a hook racing a timeout is resumed in time.
func TestHookResumedInAutomaticTime(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	env := skeintest.New(t, registry(t), skeintest.WithStartTime(start), stubNotify(&sent))
	run, err := approval.Start(env.Context(), env.Client(), "10")
	if err != nil {
		t.Fatal(err)
	}
	s := env.WaitSuspended(run.ID())
	if s.Token() != "approve/10" || len(s.Sleeps) != 1 {
		t.Fatalf("suspension %v, want the hook and its timeout", s)
	}
	time.Sleep(10 * time.Millisecond) // the test takes its time: the clock waits
	env.ResumeHook(s.Token(), Decision{Approved: true, By: "eve"})
	if got, err := skeintest.Result(env, run); err != nil || got != "approved=true by eve" {
		t.Fatalf("result %q, %v", got, err)
	}
	if !env.Now().Equal(start) {
		t.Errorf("the clock moved to %s; the run had nothing to wait for after the hook", env.Now())
	}
}
