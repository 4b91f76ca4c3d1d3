package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var errOutOfStock = errors.New("out of stock")

// TestRegisterErrorRefusesEmptyTypes: a prototype whose type keeps nothing
// in JSON (errors.New's, fmt.Errorf's) is refused, pointing at
// RegisterSentinel, and plain errors keep their messages afterwards.
func TestRegisterErrorRefusesEmptyTypes(t *testing.T) {
	t.Parallel()
	fail := sdk.NewStep("ret-fail", func(ctx context.Context, in string) (string, error) {
		return "", sdk.Fatal(errors.New("card declined"))
	})
	wrapped := sdk.NewStep("ret-wrapped", func(ctx context.Context, in string) (string, error) {
		return "", sdk.Fatal(fmt.Errorf("charge %s: %w", in, errors.New("card declined")))
	})
	wf := sdk.New("ret-wf", func(ctx sdk.Context, in string) (string, error) {
		_, err1 := fail.Call(ctx, in)
		_, err2 := wrapped.Call(ctx, in)
		return errString(err1) + " | " + errString(err2), nil
	})
	e := newEnv(t, fail, wrapped, wf)
	for _, proto := range []error{errors.New("x"), fmt.Errorf("x %w", errors.New("y")), fmt.Errorf("%w %w", errOutOfStock, errOutOfStock)} {
		err := e.reg.RegisterError("out", proto)
		if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), "RegisterSentinel") {
			t.Errorf("RegisterError(%T) = %v, want a refusal naming RegisterSentinel", proto, err)
		}
	}
	if err := e.reg.RegisterError("InvoiceLocked", &InvoiceLockedError{}); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.RegisterError("InvoiceLocked", &InvoiceLockedError{}); err != nil {
		t.Errorf("the same type under the same name again (a shared setup run twice): %v, want nil", err)
	}
	if err := e.reg.RegisterError("InvoiceLocked2", &InvoiceLockedError{}); !errors.Is(err, world.ErrConflict) {
		t.Errorf("the same type under a second name: %v, want ErrConflict", err)
	}
	if err := e.reg.RegisterError("StepError", &cloneLikeError{}); !errors.Is(err, world.ErrConflict) {
		t.Errorf("an SDK type's name: %v, want ErrConflict", err)
	}
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "o-1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := `step "ret-fail" failed (attempt 1): card declined | step "ret-wrapped" failed (attempt 1): charge o-1: card declined`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type cloneLikeError struct{ Code string }

func (e *cloneLikeError) Error() string { return e.Code }

// TestSentinelSurvivesTheLog: a registered sentinel returned by a step,
// wrapped or not, matches errors.Is in the workflow (the first execution
// and a replay alike) and at the client; an unregistered one comes back
// with its message only.
func TestSentinelSurvivesTheLog(t *testing.T) {
	t.Parallel()
	errUnregistered := errors.New("not registered")
	reserve := sdk.NewStep("sen-reserve", func(ctx context.Context, in string) (string, error) {
		switch in {
		case "wrapped":
			return "", sdk.Fatal(fmt.Errorf("%w", errOutOfStock))
		case "plain":
			return "", sdk.Fatal(errOutOfStock)
		case "retried":
			return "", fmt.Errorf("reserve %s: %w", in, errOutOfStock)
		}
		return "", sdk.Fatal(fmt.Errorf("reserve: %w", errUnregistered))
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	// checks reports what errors.Is finds in the workflow; fails returns
	// the error, for the client.
	checks := sdk.New("sen-checks", func(ctx sdk.Context, in string) (string, error) {
		_, err := reserve.Call(ctx, in)
		return fmt.Sprintf("is=%t unregistered=%t", errors.Is(err, errOutOfStock), errors.Is(err, errUnregistered)), nil
	})
	fails := sdk.New("sen-fails", func(ctx sdk.Context, in string) (string, error) {
		return reserve.Call(ctx, in)
	})
	e := newEnv(t, reserve, checks, fails)
	if err := e.reg.RegisterSentinel("out-of-stock", errOutOfStock); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.RegisterSentinel("out-of-stock", errOutOfStock); err != nil {
		t.Errorf("the same sentinel under the same name again (a shared setup run twice): %v, want nil", err)
	}
	if err := e.reg.RegisterSentinel("again", errOutOfStock); !errors.Is(err, world.ErrConflict) {
		t.Errorf("a sentinel under a second name: %v, want ErrConflict", err)
	}
	if err := e.reg.RegisterSentinel("out-of-stock", errUnregistered); !errors.Is(err, world.ErrConflict) {
		t.Errorf("a taken name: %v, want ErrConflict", err)
	}
	if err := e.reg.RegisterSentinel("nil", nil); !errors.Is(err, world.ErrInvalid) {
		t.Errorf("a nil sentinel: %v, want ErrInvalid", err)
	}
	ctx := e.ctx()
	for _, in := range []string{"wrapped", "plain", "retried", "other"} {
		wantIs := in != "other"
		run, err := checks.Start(ctx, e.client, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := run.Result(ctx)
		if want := fmt.Sprintf("is=%t unregistered=false", wantIs); err != nil || got != want {
			t.Errorf("%s: workflow saw %q, %v; want %q", in, got, err, want)
		}
		rep, cerr := sdk.CheckLog(e.reg, e.events(run.ID()))
		if cerr != nil || rep.Divergence != nil || string(rep.Output) != fmt.Sprintf("%q", got) {
			t.Errorf("%s: replayed: %+v, %v; want output %q", in, rep, cerr, got)
		}

		run2, err := fails.Start(ctx, e.client, in)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run2.Result(ctx)
		if errors.Is(err, errOutOfStock) != wantIs || errors.Is(err, errUnregistered) {
			t.Errorf("%s: client errors.Is = %t, want %t: %v", in, errors.Is(err, errOutOfStock), wantIs, err)
		}
		if wantMsg := map[bool]string{true: "out of stock", false: "reserve: not registered"}[wantIs]; !strings.Contains(errString(err), wantMsg) {
			t.Errorf("%s: message %q lacks %q", in, err, wantMsg)
		}
	}
}
