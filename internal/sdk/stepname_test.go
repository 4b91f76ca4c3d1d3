package sdk_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestInvalidStepNameFails: a step whose name the log cannot record (not
// UTF-8, too long, reserved) cannot be registered; calling it fails the
// call with an error naming the problem, which fails the run when
// returned, instead of leaving the run pending.
func TestInvalidStepNameFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, step, want string }{
		{"not utf-8", "charge-\xff", "not valid UTF-8"},
		{"too long", strings.Repeat("s", world.MaxNameLength+1), "bytes, more than"},
		{"reserved", "skein.mine", "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := sdk.NewStep(tc.step, func(ctx context.Context, in string) (string, error) { return in, nil })
			wf := sdk.New("invalid-step-name", func(ctx sdk.Context, in string) (string, error) {
				return bad.Call(ctx, in)
			})
			e := newEnv(t, wf)
			if err := e.reg.Register(bad); err == nil {
				t.Fatal("Register accepted the step")
			}
			ctx := e.ctx()
			run, err := wf.Start(ctx, e.client, "x")
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Result(ctx)
			rf := mustAs[*sdk.RunFailedError](t, err)
			if rf.Code != world.CodeUserError || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cannot be called") {
				t.Errorf("run failed with %v (code %s), want USER_ERROR naming %q", err, rf.Code, tc.want)
			}
			if n := len(e.steps(run.ID())); n != 0 {
				t.Errorf("%d steps created", n)
			}
		})
	}
}
