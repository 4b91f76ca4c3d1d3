package sdk_test

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
)

// TestStepCallRefusals: a call of a step value that is not the one
// registered under its name is refused at the call, naming the step, and
// neither function runs; arguments that do not encode (NaN) name the step;
// a result that does not decode as the caller's type (a step replaced by a
// double of another result type) is reported as a decode of that step's
// result.
func TestStepCallRefusals(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	dupA := sdk.NewStep("dup", func(ctx context.Context, s string) (int, error) { ran.Add(1); return 1, nil })
	dupB := sdk.NewStep("dup", func(ctx context.Context, s string) (string, error) { ran.Add(1); return s, nil })
	callsB := sdk.New("calls-dup-b", func(ctx sdk.Context, _ int) (string, error) {
		return dupB.Call(ctx, "x")
	})
	nanStep := sdk.NewStep("takes-float", func(ctx context.Context, f float64) (int, error) { return 1, nil })
	sendsNaN := sdk.New("sends-nan", func(ctx sdk.Context, _ int) (string, error) {
		_, err := nanStep.Call(ctx, math.NaN())
		return "", err
	})
	asString := sdk.NewStep("int-result", func(ctx context.Context, s string) (string, error) { return s, nil })
	asInt := sdk.NewStep("int-result", func(ctx context.Context, s string) (int, error) { return 7, nil })
	misreads := sdk.New("misreads", func(ctx sdk.Context, _ int) (string, error) {
		return asString.Call(ctx, "x")
	})
	e := newEnv(t, dupA, nanStep, asString, callsB, sendsNaN, misreads)
	if err := sdk.Replace(e.reg, asInt); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wf   *sdk.Workflow[int, string]
		want []string
	}{
		{callsB, []string{`step "dup" called is not the step registered under that name`}},
		{sendsNaN, []string{`failed to serialize arguments of step "takes-float"`, "NaN"}},
		{misreads, []string{`failed to decode the result of step "int-result"`}},
	} {
		t.Run(tc.wf.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			r, err := tc.wf.Start(ctx, e.client, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Result(ctx)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "failed to serialize result") {
				t.Errorf("a decode reported as a serialize: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		if n := ran.Load(); n != 0 {
			t.Errorf("a refused call ran a step function %d times", n)
		}
	})
}
