package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// journal records the side effects of steps and compensations, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
}

func (j *journal) lines() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.log)
}

// sagaSteps defines, under prefix, steps "a", "b", "c" that record "do x"
// and each declare the compensation "undo x"; c fails for good when its
// input is "fail", and "undo <failUndo>" fails for good.
func sagaSteps(prefix, failUndo string, j *journal) (steps []*sdk.Step[string, string], defs []sdk.Definition) {
	for _, x := range []string{"a", "b", "c"} {
		undo := sdk.NewStep(prefix+"undo-"+x, func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
			if x == failUndo {
				return struct{}{}, sdk.Fatal(errors.New("refund refused"))
			}
			j.add("undo " + c.Result + " of " + c.Input)
			return struct{}{}, nil
		}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
		step := sdk.NewStep(prefix+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" && in == "fail" {
				return "", sdk.Fatal(errors.New("out of stock"))
			}
			j.add("do " + x)
			return x + "-done", nil
		})
		steps = append(steps, sdk.WithCompensation(step, undo))
		defs = append(defs, undo, step)
	}
	return steps, defs
}

// TestSagaCompensatesInReverse: a saga of three steps whose third fails
// compensates the first two, in reverse order, once each, even when the
// workflow calls Compensate twice; a failed step is not compensated; the
// workflow continues after Compensate and returns a result.
func TestSagaCompensatesInReverse(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("saga-", "", j)
	saga := sdk.New("saga", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				if cerr := sdk.Compensate(ctx); cerr != nil {
					return "", cerr
				}
				if cerr := sdk.Compensate(ctx); cerr != nil { // nothing left
					return "", cerr
				}
				return "rolled back", nil
			}
		}
		return "done", nil
	})
	e := newEnv(t, append(defs, saga)...)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Result(ctx)
	if err != nil || out != "rolled back" {
		t.Fatalf("saga = %q, %v", out, err)
	}
	want := []string{"do a", "do b", "undo b-done of fail", "undo a-done of fail"}
	if got := j.lines(); !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	// Each compensation is recorded on the step it undoes, once, most
	// recently completed first; no compensation step is created.
	wantTrail := []string{"comp_started saga-b", "comp_succeeded saga-b", "comp_started saga-a", "comp_succeeded saga-a"}
	if got := compTrail(e.events(run.ID())); !slices.Equal(got, wantTrail) {
		t.Errorf("comp trail = %q, want %q", got, wantTrail)
	}
	for _, st := range e.steps(run.ID()) {
		want := map[string]world.StepStatus{"saga-a": world.StepStatusCompensated, "saga-b": world.StepStatusCompensated, "saga-c": world.StepStatusFailed}[st.StepName]
		if st.Status != want {
			t.Errorf("step %s is %s, want %s", st.StepName, st.Status, want)
		}
		if st.Compensation == nil && st.StepName != "saga-c" || st.Compensation != nil && st.Compensation.Step != "saga-undo-"+st.StepName[len("saga-"):] {
			t.Errorf("step %s records compensation %+v", st.StepName, st.Compensation)
		}
	}
}

// TestCompensationFailsForGood: a compensation that fails for good is
// reported as a *CompensationError naming the step it was to undo, wrapping
// the compensation's *StepError, and does not stop the compensations after
// it.
func TestCompensationFailsForGood(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cfail-", "b", j)
	saga := sdk.New("cfail", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				err := sdk.Compensate(ctx)
				var ce *sdk.CompensationError
				var se *sdk.StepError
				if !errors.As(err, &ce) || ce.StepID == "" || !errors.As(ce.Err, &se) {
					return "", fmt.Errorf("not a CompensationError wrapping a StepError: %v", err)
				}
				return ce.Step + " not undone by " + se.Step, nil
			}
		}
		return "done", nil
	})
	e := newEnv(t, append(defs, saga)...)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != "cfail-b not undone by cfail-undo-b" {
		t.Fatalf("cfail = %q, %v", out, err)
	}
	want := []string{"do a", "do b", "undo a-done of fail"}
	if got := j.lines(); !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
}

// TestCompensateFanOut: in a fan-out only the branches that completed are
// compensated (not the one that failed); a branch still running when
// Compensate is called is compensated by a later Compensate once it
// completes, and the branches compensated already are not again.
func TestCompensateFanOut(t *testing.T) {
	t.Parallel()
	j := &journal{}
	release := make(chan struct{})
	var once sync.Once
	undo := sdk.NewStep("fan-undo", func(ctx context.Context, c sdk.Compensation[int, int]) (struct{}, error) {
		j.add(fmt.Sprint("undo ", c.Input, "=", c.Result))
		once.Do(func() { close(release) }) // branch 3 completes after the first Compensate
		return struct{}{}, nil
	})
	branch := sdk.WithCompensation(sdk.NewStep("fan-branch", func(ctx context.Context, n int) (int, error) {
		switch n {
		case 2:
			return 0, sdk.Fatal(errors.New("branch 2 fails"))
		case 3:
			<-release
		}
		return n * 10, nil
	}), undo)
	fan := sdk.New("fan", func(ctx sdk.Context, _ int) (string, error) {
		fs := []sdk.Future[int]{branch.Go(ctx, 1), branch.Go(ctx, 2), branch.Go(ctx, 3)}
		_, _ = fs[0].Get(ctx)
		_, _ = fs[1].Get(ctx)
		if err := sdk.Compensate(ctx); err != nil { // branch 1 only
			return "", err
		}
		_, _ = fs[2].Get(ctx)
		return "ok", sdk.Compensate(ctx) // branch 3 only
	})
	e := newEnv(t, undo, branch, fan)
	ctx := e.ctx()
	run, err := fan.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != "ok" {
		t.Fatalf("fan = %q, %v", out, err)
	}
	want := []string{"undo 1=10", "undo 3=30"}
	if got := j.lines(); !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
}

// TestCompensationRegistration: a step whose compensation is not
// registered (in the same call or an earlier one), or is nil, is refused by
// Register and Replace with a *RegistrationError, and nothing
// of the call is registered.
func TestCompensationRegistration(t *testing.T) {
	t.Parallel()
	mk := func(name string) *sdk.Step[string, string] {
		return sdk.NewStep(name, func(ctx context.Context, s string) (string, error) { return s, nil })
	}
	undo := func(name string) *sdk.Step[sdk.Compensation[string, string], struct{}] {
		return sdk.NewStep(name, func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
			return struct{}{}, nil
		})
	}
	u := undo("reg-undo")
	for _, tc := range []struct {
		name     string
		setup    []sdk.Definition
		register func(r *sdk.Registry) error
		wantComp string // "" for no error
		wantErr  bool
	}{
		{name: "same call", register: func(r *sdk.Registry) error {
			return r.Register(sdk.WithCompensation(mk("s1"), u), u)
		}},
		{name: "earlier call", setup: []sdk.Definition{u}, register: func(r *sdk.Registry) error {
			return r.Register(sdk.WithCompensation(mk("s1"), u))
		}},
		{name: "unregistered", wantErr: true, wantComp: "reg-undo", register: func(r *sdk.Registry) error {
			return r.Register(sdk.WithCompensation(mk("s1"), u))
		}},
		{name: "another step of that name", setup: []sdk.Definition{undo("reg-undo")}, wantErr: true, wantComp: "reg-undo",
			register: func(r *sdk.Registry) error { return r.Register(sdk.WithCompensation(mk("s1"), u)) }},
		{name: "nil", wantErr: true, register: func(r *sdk.Registry) error {
			return r.Register(sdk.WithCompensation(mk("s1"), nil))
		}},
		{name: "replace", setup: []sdk.Definition{mk("s1")}, wantErr: true, wantComp: "reg-undo",
			register: func(r *sdk.Registry) error { return sdk.Replace(r, sdk.WithCompensation(mk("s1"), u)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sdk.NewRegistry()
			if err := r.Register(tc.setup...); err != nil {
				t.Fatal(err)
			}
			err := tc.register(r)
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ue *sdk.RegistrationError
			if !errors.As(err, &ue) || ue.Problem != sdk.RegistrationUnregisteredCompensation || ue.Kind != "step" || ue.Name != "s1" || ue.Compensation != tc.wantComp || !errors.Is(err, world.ErrInvalid) {
				t.Fatalf("err = %v, want a RegistrationError of s1 whose compensation %q is not registered", err, tc.wantComp)
			}
			if tc.name != "replace" {
				// Nothing of the call was registered: s1 can be registered anew.
				if err := r.Register(mk("s1")); err != nil {
					t.Errorf("s1 was registered by the refused call: %v", err)
				}
			}
		})
	}
}

// TestCompensateOnFailure: a workflow defined WithCompensateOnFailure that
// returns an error fails with that error, and then the steps that
// completed are compensated, in reverse order, including a step still
// running when the function returned (it completes after the end), and not
// the ones it compensated itself; the run is deactivated once they have
// ended. Without the option nothing is compensated.
func TestCompensateOnFailure(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cof-", "", j)
	late := make(chan struct{})
	var lateOnce sync.Once
	undoSlow := sdk.NewStep("cof-undo-slow", func(ctx context.Context, c sdk.Compensation[string, string]) (struct{}, error) {
		j.add("undo " + c.Result)
		return struct{}{}, nil
	})
	slow := sdk.WithCompensation(sdk.NewStep("cof-slow", func(ctx context.Context, in string) (string, error) {
		<-late
		return "slow-done", nil
	}), undoSlow)
	body := func(ctx sdk.Context, in string) (string, error) {
		if in == "self" {
			if _, err := steps[0].Call(ctx, in); err != nil {
				return "", err
			}
			if err := sdk.Compensate(ctx); err != nil { // a undone here, not again
				return "", err
			}
		}
		if in == "slow" {
			slow.Go(ctx, in) // still running when the workflow fails
		}
		for _, s := range steps[1:] {
			if _, err := s.Call(ctx, "fail"); err != nil {
				if in == "slow" { // the slow step completes after the failure
					lateOnce.Do(func() { close(late) })
				}
				return "", err
			}
		}
		return "done", nil
	}
	auto := sdk.New("cof", body).WithCompensateOnFailure()
	plain := sdk.New("cof-plain", body)
	e := newEnv(t, append(defs, undoSlow, slow, auto, plain)...)
	for _, tc := range []struct {
		wf   *sdk.Workflow[string, string]
		in   string
		want []string
	}{
		{auto, "self", []string{"do a", "undo a-done of self", "do b", "undo b-done of fail"}},
		{auto, "slow", []string{"do b", "undo slow-done", "undo b-done of fail"}},
		{plain, "plain", []string{"do b"}},
	} {
		j.mu.Lock()
		j.log = nil
		j.mu.Unlock()
		ctx := e.ctx()
		run, err := tc.wf.Start(ctx, e.client, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "out of stock") {
			t.Errorf("%s(%s): Result error = %v, want the step's failure", tc.wf.Name(), tc.in, err)
		}
		if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
			t.Fatal(err)
		}
		if got := j.lines(); !slices.Equal(got, tc.want) {
			t.Errorf("%s(%s): journal = %q, want %q", tc.wf.Name(), tc.in, got, tc.want)
		}
	}
}

// TestCompensateOnFailureReportsFailedCompensation: a compensation that
// fails for good after the end leaves its step compensation_failed, does
// not stop the compensations after it, and RunInfo says so; the run's
// outcome stays the workflow's failure.
func TestCompensateOnFailureReportsFailedCompensation(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cofx-", "b", j)
	wf := sdk.New("cofx", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "done", nil
	}).WithCompensateOnFailure()
	e := newEnv(t, append(defs, wf)...)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err = run.Result(ctx); err == nil || !strings.Contains(err.Error(), "out of stock") || strings.Contains(err.Error(), "compensation") {
		t.Errorf("Result error = %v, want the step's failure alone", err)
	}
	info, err := e.client.WaitDeactivated(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	c := info.Compensations
	if c.Status() != world.StepStatusCompensationFailed || c.Failed != 1 || c.Succeeded != 1 || c.Owed != 0 || c.Running != 0 || !c.Requested {
		t.Errorf("Compensations = %+v (status %q), want one failed, one succeeded", c, c.Status())
	}
	if len(c.Failures) != 1 || c.Failures[0].Step != "cofx-b" || !strings.Contains(c.Failures[0].Error(), "refund refused") {
		t.Errorf("Failures = %v, want the compensation of cofx-b", c.Failures)
	} else if se := mustAs[*sdk.StepError](t, c.Failures[0].Err); se.Step != "cofx-undo-b" {
		t.Errorf("failed compensation step = %q", se.Step)
	}
	if got, want := j.lines(), []string{"do a", "do b", "undo a-done of fail"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	if st := e.stepNamed(run.ID(), "cofx-b"); st.Status != world.StepStatusCompensationFailed {
		t.Errorf("cofx-b is %s, want compensation_failed", st.Status)
	}
	if got, err := e.client.GetRun(ctx, run.ID()); err != nil || len(got.Compensations.Failures) != 1 {
		t.Errorf("GetRun compensations = %+v, %v", got.Compensations, err)
	}
}

// TestCompensateOnFailureNotOnCancel: a cancelled run is not compensated
// unless the cancellation asks for it (CancelCompensating), even with
// WithCompensateOnFailure: it ends cancelled, and comes to rest without
// running a compensation.
func TestCompensateOnFailureNotOnCancel(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cofc-", "", j)
	wf := sdk.New("cofc", func(ctx sdk.Context, in string) (string, error) {
		if _, err := steps[0].Call(ctx, in); err != nil {
			return "", err
		}
		return "", sdk.Sleep(ctx, time.Minute)
	}).WithCompensateOnFailure()
	e := newEnv(t, append(defs, wf)...)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run.ID(), world.EventWaitCreated)
	if err := run.Cancel(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, sdk.ErrRunCancelled) {
		t.Fatalf("Result error = %v, want ErrRunCancelled", err)
	}
	if _, err := e.client.WaitDeactivated(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	if got, want := j.lines(), []string{"do a"}; !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
}

// compTrail returns the comp_* events of a log as "type step" lines, in
// log order.
func compTrail(evs []world.Event) []string {
	var out []string
	for _, ev := range evs {
		var step string
		switch d := ev.Data.(type) {
		case *world.CompStarted:
			step = d.StepName
		case *world.CompRetryScheduled:
			step = d.StepName
		case *world.CompSucceeded:
			step = d.StepName
		case *world.CompFailed:
			step = d.StepName
		default:
			continue
		}
		out = append(out, string(ev.Type())+" "+step)
	}
	return out
}

// seqOf returns the sequence number of the first event of type t in a
// log, 0 when there is none.
func seqOf(evs []world.Event, t world.EventType) int64 {
	for _, ev := range evs {
		if ev.Type() == t {
			return ev.Seq
		}
	}
	return 0
}
