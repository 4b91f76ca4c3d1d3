package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var fastRetries = sdk.StepOptions{Backoff: func(int) time.Duration { return 5 * time.Millisecond }}

func TestRetries(t *testing.T) {
	t.Parallel()
	untilThree := sdk.NewStep("untilThree", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		if m.Attempt < 3 {
			return 0, errors.New("not yet")
		}
		return m.Attempt, nil
	}, fastRetries)
	alwaysFatal := sdk.NewStep("alwaysFatal", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, sdk.Fatal(errors.New("fatal: give up"))
	}, fastRetries)
	retryAfter := sdk.NewStep("retryAfter", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		if m.Attempt == 1 {
			return 0, sdk.RetryAfter(errors.New("later"), 300*time.Millisecond)
		}
		return m.Attempt, nil
	})
	noRetries := sdk.NewStep("noRetries", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, errors.New("once")
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	exhausts := sdk.NewStep("exhausts", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, errors.New("always")
	}, fastRetries)
	panics := sdk.NewStep("panics", func(ctx context.Context, _ struct{}) (int, error) {
		m, _ := sdk.StepMetadataFrom(ctx)
		if m.Attempt < 2 {
			panic("step exploded")
		}
		return m.Attempt, nil
	}, fastRetries)
	type result struct {
		Attempt int
		Failed  bool
		IsFatal bool
		Message string
		Elapsed time.Duration
	}
	caller := func(s *sdk.Step[struct{}, int]) *sdk.Workflow[struct{}, result] {
		return sdk.New("call-"+s.Name(), func(ctx sdk.Context, _ struct{}) (result, error) {
			start := ctx.Now()
			n, err := s.Call(ctx, struct{}{})
			if err != nil {
				var se *sdk.StepError
				errors.As(err, &se)
				_, fatal := sdk.FatalCause(err)
				return result{Failed: true, Attempt: se.Attempt, IsFatal: fatal, Message: err.Error()}, nil
			}
			return result{Attempt: n, Elapsed: ctx.Now().Sub(start)}, nil
		})
	}
	uncaught := sdk.New("uncaughtFatal", func(ctx sdk.Context, _ struct{}) (int, error) {
		return alwaysFatal.Call(ctx, struct{}{})
	})
	steps := []*sdk.Step[struct{}, int]{untilThree, alwaysFatal, retryAfter, noRetries, exhausts, panics}
	defs := []sdk.Definition{uncaught}
	wfs := map[string]*sdk.Workflow[struct{}, result]{}
	for _, s := range steps {
		wf := caller(s)
		wfs[s.Name()] = wf
		defs = append(defs, s, wf)
	}
	e := newEnv(t, defs...)
	for _, tc := range []struct {
		step        string
		want        result
		rowAttempt  int
		rowStatus   world.StepStatus
		minDuration time.Duration
		msg         string
	}{
		{"untilThree", result{Attempt: 3}, 3, world.StepStatusCompleted, 0, ""},
		{"alwaysFatal", result{Failed: true, Attempt: 1, IsFatal: true}, 1, world.StepStatusFailed, 0, "fatal: give up"},
		{"retryAfter", result{Attempt: 2}, 2, world.StepStatusCompleted, 300 * time.Millisecond, ""},
		{"noRetries", result{Failed: true, Attempt: 1}, 1, world.StepStatusFailed, 0, "once"},
		{"exhausts", result{Failed: true, Attempt: 4}, 4, world.StepStatusFailed, 0, "always"},
		{"panics", result{Attempt: 2}, 2, world.StepStatusCompleted, 0, ""},
	} {
		t.Run(tc.step, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			began := time.Now()
			run, err := wfs[tc.step].Start(ctx, e.client, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Attempt != tc.want.Attempt || got.Failed != tc.want.Failed || got.IsFatal != tc.want.IsFatal {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !strings.Contains(got.Message, tc.msg) {
				t.Errorf("message %q lacks %q", got.Message, tc.msg)
			}
			if el := time.Since(began); el < tc.minDuration {
				t.Errorf("took %s, want at least %s", el, tc.minDuration)
			}
			if tc.minDuration > 0 && got.Elapsed < tc.minDuration {
				t.Errorf("workflow time advanced %s, want at least %s", got.Elapsed, tc.minDuration)
			}
			row := e.stepNamed(run.ID(), tc.step)
			if row.Attempt != tc.rowAttempt || row.Status != tc.rowStatus {
				t.Errorf("step row: attempt %d %s, want %d %s", row.Attempt, row.Status, tc.rowAttempt, tc.rowStatus)
			}
			if tc.step == "panics" {
				evs := e.events(run.ID())
				var stack string
				for _, ev := range evs {
					if d, ok := ev.Data.(*world.StepRetrying); ok {
						stack = d.Error.Stack
					}
				}
				if !strings.Contains(stack, "panic") {
					t.Errorf("retry error has no stack: %q", stack)
				}
			}
		})
	}
	t.Run("uncaughtFatal", func(t *testing.T) {
		t.Parallel()
		ctx := e.ctx()
		run, err := uncaught.Start(ctx, e.client, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = run.Result(ctx)
		rf := mustAs[*sdk.RunFailedError](t, err)
		if _, fatal := sdk.FatalCause(err); !fatal {
			t.Errorf("%v: want the fatal error, typed again", err)
		}
		if rf.Code != world.CodeUserError {
			t.Errorf("code %s", rf.Code)
		}
		if row := e.stepNamed(run.ID(), "alwaysFatal"); row.Attempt != 1 || row.Status != world.StepStatusFailed {
			t.Errorf("step row %+v", row)
		}
	})
}

// InvoiceLockedError is a user error type registered to survive the log.
type InvoiceLockedError struct {
	Code    string `json:"code"`
	Invoice string `json:"invoice"`
}

func (e *InvoiceLockedError) Error() string { return "invoice " + e.Invoice + " is locked" }

func TestErrorRoundTrips(t *testing.T) {
	t.Parallel()
	throwFatal := sdk.NewStep("throwFatal", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, sdk.Fatal(&InvoiceLockedError{Code: "INVOICE_LOCKED", Invoice: "42"})
	})
	type result struct {
		IsFatal bool
		IsStep  bool
		Code    string
		Cause   string
	}
	stepRoundTrip := sdk.New("stepRoundTrip", func(ctx sdk.Context, _ struct{}) (result, error) {
		_, err := throwFatal.Call(ctx, struct{}{})
		var se *sdk.StepError
		var il *InvoiceLockedError
		cause, fatal := sdk.FatalCause(err)
		r := result{IsFatal: fatal, IsStep: errors.As(err, &se)}
		if errors.As(err, &il) {
			r.Code = il.Code
		}
		if fatal {
			r.Cause = cause.Error()
		}
		return r, nil
	})
	workflowThrows := sdk.New("workflowThrows", func(ctx sdk.Context, _ struct{}) (int, error) {
		return 0, sdk.Fatal(errors.New("Nested workflow error"))
	})
	workflowPanics := sdk.New("workflowPanics", func(ctx sdk.Context, _ struct{}) (int, error) {
		panic("workflow exploded")
	})
	e := newEnv(t, throwFatal, stepRoundTrip, workflowThrows, workflowPanics)
	if err := e.reg.RegisterError("InvoiceLocked", &InvoiceLockedError{}); err != nil {
		t.Fatal(err)
	}
	ctx := e.ctx()

	run, err := stepRoundTrip.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (result{IsFatal: true, IsStep: true, Code: "INVOICE_LOCKED", Cause: "invoice 42 is locked"}); got != want {
		t.Errorf("step round trip = %+v, want %+v", got, want)
	}

	run2, err := workflowThrows.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run2.Result(ctx)
	rf := mustAs[*sdk.RunFailedError](t, err)
	cause, fatal := sdk.FatalCause(err)
	if rf.Code != world.CodeUserError || !fatal || cause.Error() != "Nested workflow error" {
		t.Errorf("workflow error = %v", err)
	}
	info, _ := run2.Info(ctx)
	if info.ErrorCode != world.CodeUserError || info.Err == nil {
		t.Errorf("run row %+v", info)
	}

	run3, err := workflowPanics.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run3.Result(ctx)
	rf = mustAs[*sdk.RunFailedError](t, err)
	pe := mustAs[*sdk.Error](t, err)
	if rf.Code != world.CodeUserError || !strings.Contains(pe.Message, "workflow exploded") || !strings.Contains(pe.Stack, "TestErrorRoundTrips") {
		t.Errorf("panic error = %v, stack %q", err, pe.Stack)
	}
}

type unserializable struct{ C chan int }

func TestSerializationErrors(t *testing.T) {
	t.Parallel()
	takes := sdk.NewStep("takesChan", func(ctx context.Context, in unserializable) (int, error) { return 1, nil })
	returns := sdk.NewStep("returnsChan", func(ctx context.Context, _ struct{}) (unserializable, error) {
		return unserializable{C: make(chan int)}, nil
	})
	mk := func(name string, caught bool, call func(sdk.Context) error) *sdk.Workflow[struct{}, string] {
		return sdk.New(name, func(ctx sdk.Context, _ struct{}) (string, error) {
			err := call(ctx)
			if err == nil {
				return "no error", nil
			}
			if !caught {
				return "", err
			}
			var se *sdk.SerializationError
			if !errors.As(err, &se) {
				return "wrong error: " + err.Error(), nil
			}
			return se.Error(), nil
		})
	}
	args := func(ctx sdk.Context) error {
		_, err := takes.Call(ctx, unserializable{C: make(chan int)})
		return err
	}
	ret := func(ctx sdk.Context) error { _, err := returns.Call(ctx, struct{}{}); return err }
	wfs := []*sdk.Workflow[struct{}, string]{
		mk("argsCaught", true, args), mk("argsUncaught", false, args),
		mk("returnCaught", true, ret), mk("returnUncaught", false, ret),
	}
	e := newEnv(t, takes, returns, wfs[0], wfs[1], wfs[2], wfs[3])
	for _, wf := range wfs {
		t.Run(wf.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			want := `failed to serialize arguments of step "takesChan"`
			if strings.HasPrefix(wf.Name(), "return") {
				want = `failed to serialize return value of step "returnsChan"`
			}
			if strings.HasSuffix(wf.Name(), "Caught") {
				if err != nil || !strings.Contains(got, want) {
					t.Errorf("got %q, %v; want %q", got, err, want)
				}
			} else {
				rf := mustAs[*sdk.RunFailedError](t, err)
				mustAs[*sdk.SerializationError](t, err)
				if rf.Code != world.CodeUserError || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v", err)
				}
			}
			if strings.HasPrefix(wf.Name(), "return") {
				row := e.stepNamed(run.ID(), "returnsChan")
				if row.Status != world.StepStatusFailed || row.Attempt != 1 {
					t.Errorf("step row: %s attempt %d, want failed at 1 (never retried)", row.Status, row.Attempt)
				}
			} else if len(e.steps(run.ID())) != 0 {
				t.Error("a step was created for unserializable arguments")
			}
		})
	}
}

func TestUnregistered(t *testing.T) {
	t.Parallel()
	ghost := sdk.NewStep("ghostStep", func(ctx context.Context, _ struct{}) (int, error) { return 1, nil })
	calls := sdk.New("callsUnregistered", func(ctx sdk.Context, _ struct{}) (int, error) {
		return ghost.Call(ctx, struct{}{})
	})
	e := newEnv(t, calls) // ghostStep is not registered
	ctx := e.ctx()

	runID, err := e.client.Start(ctx, "noSuchWorkflow", 1, sdk.StartUnregistered())
	if err != nil {
		t.Fatal(err)
	}
	err = e.client.Result(ctx, runID, nil)
	rf := mustAs[*sdk.RunFailedError](t, err)
	if rf.Code != world.CodeRuntimeError || !strings.Contains(err.Error(), "is not registered") {
		t.Errorf("unregistered workflow: %v", err)
	}

	// A step not registered is a deploy mistake: the run is held, the step
	// never created (TestUnregisteredStepHoldsTheRun).
	run, err := calls.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hold", func() bool { st, _ := statusOf(ctx, run); return st == world.RunStatusHeld })
	if n := len(e.steps(run.ID())); n != 0 {
		t.Errorf("%d steps created", n)
	}
}

// TestInputThatIsNoJSONIsInvalid: a start's input or a hook's payload that
// does not encode (a json.RawMessage that is no JSON) is a bad request:
// world.ErrInvalid, and the *SerializationError saying what.
func TestInputThatIsNoJSONIsInvalid(t *testing.T) {
	t.Parallel()
	wf := sdk.New("takesAnything", func(ctx sdk.Context, in json.RawMessage) (string, error) { return "", nil })
	e := newEnv(t, wf)
	ctx := e.ctx()
	bad := json.RawMessage(`{"unterminated": `)
	_, startErr := e.client.Start(ctx, "takesAnything", bad)
	_, typedErr := wf.Start(ctx, e.client, bad)
	_, hookErr := e.client.ResumeHook(ctx, "some-token", bad)
	for what, err := range map[string]error{"Start": startErr, "Workflow.Start": typedErr, "ResumeHook": hookErr} {
		var se *sdk.SerializationError
		if !errors.Is(err, world.ErrInvalid) || !errors.As(err, &se) || se.Decode {
			t.Errorf("%s with input that is no JSON: %v, want world.ErrInvalid and a *SerializationError", what, err)
		}
	}
}
