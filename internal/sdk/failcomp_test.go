package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// heldSaga is a saga defined WithCompensateOnFailure whose v2 diverges
// from the log v1 wrote: v1 books (undone by unbook) and waits on a hook,
// v2 calls another step first.
type heldSaga struct {
	v1, v2   *sdk.Workflow[string, int]
	book     *sdk.Step[string, string]
	other    *sdk.Step[string, string]
	unbook   *sdk.Step[sdk.Compensation[string, string], struct{}]
	unbooked *atomic.Int32
}

func newHeldSaga(name string) *heldSaga {
	h := &heldSaga{unbooked: &atomic.Int32{}}
	h.unbook = sdk.NewStep(name+"-unbook", func(context.Context, sdk.Compensation[string, string]) (struct{}, error) {
		h.unbooked.Add(1)
		return struct{}{}, nil
	})
	h.book = sdk.WithCompensation(sdk.NewStep(name+"-book", func(_ context.Context, in string) (string, error) { return "booked " + in, nil }), h.unbook)
	h.other = sdk.NewStep(name+"-other", func(_ context.Context, in string) (string, error) { return in, nil })
	version := func(first *sdk.Step[string, string]) *sdk.Workflow[string, int] {
		return sdk.New(name, func(ctx sdk.Context, key string) (int, error) {
			if _, err := first.Call(ctx, key); err != nil {
				return 0, err
			}
			return sdk.NewHook[int](ctx, sdk.HookOptions{Token: name + "-" + key}).Receive(ctx)
		}).WithCompensateOnFailure()
	}
	h.v1, h.v2 = version(h.book), version(h.other)
	return h
}

// TestFailRunCompensates: a held run of a saga failed by hand is
// compensated when asked (FailCompensating), or by default when the
// client's Registry holds its workflow defined WithCompensateOnFailure; not
// when the client cannot tell (no Registry) or FailWithoutCompensating.
func TestFailRunCompensates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		withReg     bool
		opts        []sdk.FailOption
		compensated bool
	}{
		{"registry default", true, nil, true},
		{"no registry", false, nil, false},
		{"no registry, asked", false, []sdk.FailOption{sdk.FailCompensating()}, true},
		{"registry, declined", true, []sdk.FailOption{sdk.FailWithoutCompensating()}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			h := newHeldSaga(fmt.Sprintf("fail-saga-%d", i))
			stop := deploy(t, ctx, lw, sdk.NewRegistry().MustRegister(h.v1, h.unbook, h.book))
			plain, _ := sdk.NewClient(sdk.ClientConfig{World: lw})
			run, err := h.v1.Start(ctx, plain, "k")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "v1 waiting on its hook", func() bool { _, err := plain.GetHookByToken(ctx, h.v1.Name()+"-k"); return err == nil })
			stop()
			reg := sdk.NewRegistry().MustRegister(h.v2, h.unbook, h.book, h.other)
			defer deploy(t, ctx, lw, reg)()
			if _, err := plain.ResumeHook(ctx, h.v1.Name()+"-k", 7); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the run held", func() bool { s, err := statusOfID(ctx, plain, run.ID()); return err == nil && s == world.RunStatusHeld })
			client := plain
			if tc.withReg {
				client, _ = sdk.NewClient(sdk.ClientConfig{World: lw, Registry: reg})
			}
			if err := client.FailRun(ctx, run.ID(), "v1 is gone", tc.opts...); err != nil {
				t.Fatal(err)
			}
			info, err := plain.WaitDeactivated(ctx, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			c := info.Compensations
			if tc.compensated {
				if !c.Requested || c.Succeeded != 1 || c.Owed != 0 || h.unbooked.Load() != 1 {
					t.Fatalf("compensations %+v, unbooked %d; want the booking undone", c, h.unbooked.Load())
				}
				return
			}
			if c.Requested || c.Succeeded != 0 || c.Owed != 1 || h.unbooked.Load() != 0 {
				t.Fatalf("compensations %+v, unbooked %d; want the booking kept", c, h.unbooked.Load())
			}
		})
	}
}

// TestCompensationFailuresInOrder: RunInfo.Compensations.Failures lists
// the failed compensations in the order they ran, the most recently
// completed step first, as Compensate's joined error does; not in the
// order the steps were created.
func TestCompensationFailuresInOrder(t *testing.T) {
	t.Parallel()
	var steps []*sdk.Step[string, string]
	var defs []sdk.Definition
	for _, x := range []string{"a", "b", "c"} {
		undo := sdk.NewStep("cfo-undo-"+x, func(context.Context, sdk.Compensation[string, string]) (struct{}, error) {
			return struct{}{}, sdk.Fatal(errors.New("cannot undo " + x))
		}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
		step := sdk.WithCompensation(sdk.NewStep("cfo-"+x, func(_ context.Context, in string) (string, error) { return x, nil }), undo)
		steps = append(steps, step)
		defs = append(defs, undo, step)
	}
	wf := sdk.New("cfo", func(ctx sdk.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				return "", err
			}
		}
		return "", sdk.Fatal(errors.New("rejected"))
	}).WithCompensateOnFailure()
	e := newEnv(t, append(defs, wf)...)
	run, err := wf.Start(e.ctx(), e.client, "x")
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.client.WaitDeactivated(e.ctx(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range info.Compensations.Failures {
		got = append(got, f.Step)
	}
	if want := []string{"cfo-c", "cfo-b", "cfo-a"}; !slices.Equal(got, want) {
		t.Fatalf("Failures name %q, want %q (compensation order)", got, want)
	}
}
