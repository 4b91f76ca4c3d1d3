package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestMultiErrorsRoundTrip: an error that wraps several (errors.Join, a
// fmt.Errorf with two %w) comes back from the log with each member typed
// as it was, as does a *CompensationError, with its step and step ID;
// the message is the one the workflow returned.
func TestMultiErrorsRoundTrip(t *testing.T) {
	t.Parallel()
	comp := &sdk.CompensationError{Step: "charge", StepID: "st_7", Err: errors.New("refund refused")}
	locked := &InvoiceLockedError{Code: "INVOICE_LOCKED", Invoice: "42"}
	cases := []struct {
		name string
		err  error
	}{
		{"join", errors.Join(sdk.Fatal(errors.New("out of stock")), comp, locked)},
		{"wrapped join", fmt.Errorf("saga undone: %w", errors.Join(sdk.Fatal(errors.New("out of stock")), comp, locked))},
		{"two %w", fmt.Errorf("%w; then %w (%w)", sdk.Fatal(errors.New("out of stock")), comp, locked)},
		{"join in a join", errors.Join(sdk.Fatal(errors.New("out of stock")), errors.Join(comp, locked))},
	}
	var defs []sdk.Definition
	wfs := map[string]*sdk.Workflow[int, int]{}
	for _, tc := range cases {
		wf := sdk.New("multi-"+tc.name, func(ctx sdk.Context, _ int) (int, error) { return 0, tc.err })
		wfs[tc.name] = wf
		defs = append(defs, wf)
	}
	e := newEnv(t, defs...)
	if err := e.reg.RegisterError("InvoiceLocked", &InvoiceLockedError{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := wfs[tc.name].Start(ctx, e.client, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Result(ctx)
			rf := mustAs[*sdk.RunFailedError](t, err)
			if rf.Cause.Error() != tc.err.Error() {
				t.Errorf("message %q, want %q", rf.Cause.Error(), tc.err.Error())
			}
			fe, fatal := sdk.FatalCause(err)
			ce := mustAs[*sdk.CompensationError](t, err)
			il := mustAs[*InvoiceLockedError](t, err)
			if !fatal || fe.Error() != "out of stock" || ce.Step != "charge" || ce.StepID != "st_7" || ce.Err.Error() != "refund refused" || *il != *locked {
				t.Errorf("members after the round trip: fatal %v, compensation %+v, invoice %+v", fe, ce, il)
			}
		})
	}
}

// TestCompensateErrorIsTyped: a workflow that returns Compensate's error
// wrapped (fmt.Errorf with %w around the join of its failures) fails its
// run with an error in which the client finds the *CompensationError
// naming the step whose compensation failed, its step ID, and the
// compensation's own *StepError.
func TestCompensateErrorIsTyped(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("cotyped-", "a", j)
	saga := func(ctx sdk.Context, in string) error {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return err
			}
		}
		return nil
	}
	explicit := sdk.New("cotyped-explicit", func(ctx sdk.Context, in string) (string, error) {
		if err := saga(ctx, in); err != nil {
			return "", fmt.Errorf("order undone: %w", sdk.Compensate(ctx))
		}
		return "done", nil
	})
	e := newEnv(t, append(defs, explicit)...)
	for _, tc := range []struct {
		wf       *sdk.Workflow[string, string]
		compStep string
	}{
		{explicit, "cotyped-a"},
	} {
		t.Run(tc.wf.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := tc.wf.Start(ctx, e.client, "fail")
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Result(ctx)
			ce := mustAs[*sdk.CompensationError](t, err)
			if ce.Step != tc.compStep || ce.StepID == "" {
				t.Errorf("CompensationError %+v, want step %q with its step ID", ce, tc.compStep)
			}
			if se := mustAs[*sdk.StepError](t, ce.Err); se.Step != "cotyped-undo-a" {
				t.Errorf("the compensation's error %+v, want the StepError of cotyped-undo-a", se)
			}
		})
	}
}

// TestOldMultiErrorLogsDecode: a log written before multi-errors kept
// their members (a join recorded with its message only) still reads back,
// as a *workflow.Error with that message.
func TestOldMultiErrorLogsDecode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	for _, typ := range []string{"*errors.joinError", "AllFailedError"} {
		id := world.NewIDSource(nil, nil).New(world.PrefixRun)
		old := &world.ErrorData{Type: typ, Message: "first\nsecond", Cause: &world.ErrorData{Type: "*errors.errorString", Message: "first"}}
		if typ == "*errors.joinError" {
			old.Cause = nil
		}
		if _, err := e.lw.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "gone", Input: []byte("1")}},
			{Data: &world.RunFailed{Error: old, ErrorCode: world.CodeUserError}},
		}}); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := e.client.Result(rctx, id, nil)
		cancel()
		if we := mustAs[*sdk.Error](t, err); we.Message != "first\nsecond" || we.Type != typ {
			t.Errorf("%s: old log reads back as %+v", typ, we)
		}
	}
}

// TestAnyAllFailed: when every future of Any fails, the workflow gets
// their errors joined, each typed (errors.As finds each step's
// *StepError and a member's own type), with a message saying how many
// failed; returned, it fails the run with that error, recorded as
// AllFailedError with its members, and the client finds the same.
func TestAnyAllFailed(t *testing.T) {
	t.Parallel()
	declined := sdk.NewStep("any-declined", func(context.Context, struct{}) (int, error) {
		return 0, sdk.Fatal(&InvoiceLockedError{Code: "INVOICE_LOCKED", Invoice: "7"})
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	timedOut := sdk.NewStep("any-timed-out", func(context.Context, struct{}) (int, error) {
		return 0, sdk.Fatal(context.DeadlineExceeded)
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	check := func(t *testing.T, err error) {
		t.Helper()
		il := mustAs[*InvoiceLockedError](t, err)
		if il.Invoice != "7" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v: want both members typed", err)
		}
		multi, ok := errors.Unwrap(mustAs[*sdk.RunFailedError](t, err)).(interface{ Unwrap() []error })
		if !ok || len(multi.Unwrap()) != 2 {
			t.Fatalf("%v: want the two futures' errors", err)
		}
		for i, step := range []string{"any-declined", "any-timed-out"} {
			if se := mustAs[*sdk.StepError](t, multi.Unwrap()[i]); se.Step != step {
				t.Errorf("member %d is of step %q, want %q", i, se.Step, step)
			}
		}
		if want := "all 2 futures failed: "; !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	var seen error
	wf := sdk.New("any-all-failed", func(ctx sdk.Context, _ int) (int, error) {
		_, err := sdk.Any(ctx, declined.Go(ctx, struct{}{}), timedOut.Go(ctx, struct{}{}))
		seen = err
		return 0, err
	})
	e := newEnv(t, wf, declined, timedOut)
	if err := e.reg.RegisterError("InvoiceLocked", &InvoiceLockedError{}); err != nil {
		t.Fatal(err)
	}
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	check(t, err)
	if r, gerr := e.lw.GetRun(ctx, &world.GetRunParams{RunID: run.ID()}); gerr != nil || r.Error == nil || r.Error.Type != "AllFailedError" || len(r.Error.Errors) != 2 {
		t.Errorf("the run as stored: %+v, %v; want an AllFailedError with 2 members", r, gerr)
	}
	if seen == nil || seen.Error() != errors.Unwrap(err).Error() {
		t.Errorf("the workflow saw %v, the client %v", seen, err)
	}
}
