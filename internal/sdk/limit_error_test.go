package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestRunFailedOverALimitIsLimitExceeded: a run failed for passing one of
// its limits reaches its caller as a *RunFailedError that matches
// world.ErrLimitExceeded (its *world.LimitError does not survive the log;
// its code does); other failures do not match.
func TestRunFailedOverALimitIsLimitExceeded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code string
		want bool
	}{
		{world.CodeMaxEventsExceeded, true},
		{world.CodeLimitExceeded, true},
		{world.CodeUserError, false},
	} {
		err := error(&sdk.RunFailedError{RunID: "wrun_x", Code: c.code, Cause: errors.New("boom")})
		if got := errors.Is(err, world.ErrLimitExceeded); got != c.want {
			t.Errorf("code %s: errors.Is(err, world.ErrLimitExceeded) = %v, want %v", c.code, got, c.want)
		}
	}
}

// A run whose workflow returns a step's refusal by a limit (a result over
// the payload limit, a stream write over its bound) fails with
// LIMIT_EXCEEDED, and its caller's error matches world.ErrLimitExceeded,
// as for a run output over the limit; a plain step error stays USER_ERROR.
func TestStepLimitRefusalFailsRunAsLimitExceeded(t *testing.T) {
	t.Parallel()
	big := sdk.NewStep("big-result", func(context.Context, int) (string, error) {
		return strings.Repeat("r", 4<<10), nil
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	streamer := sdk.NewStep("streamer", func(ctx context.Context, _ int) (int, error) {
		w := sdk.Writer(ctx, "out")
		chunk := []byte(strings.Repeat("s", 1<<10))
		for i := range 16 {
			if _, err := w.Write(chunk); err != nil {
				return i, sdk.Fatal(err)
			}
		}
		return 16, w.Close()
	}, sdk.StepOptions{MaxRetries: sdk.NoRetries})
	plain := sdk.NewStep("plain", func(context.Context, int) (int, error) {
		return 0, sdk.Fatal(errors.New("boom"))
	})
	wfOf := func(name string, s *sdk.Step[int, string]) *sdk.Workflow[int, string] {
		return sdk.New(name, func(ctx sdk.Context, n int) (string, error) { return s.Call(ctx, n) })
	}
	bigWF := wfOf("big", big)
	streamWF := sdk.New("stream", func(ctx sdk.Context, n int) (int, error) { return streamer.Call(ctx, n) })
	plainWF := sdk.New("plain", func(ctx sdk.Context, n int) (int, error) { return plain.Call(ctx, n) })
	e := newEnvWith(t, envOptions{limits: world.Limits{MaxPayload: 2 << 10, MaxStreamBytes: 4 << 10}}, bigWF, streamWF, plainWF, big, streamer, plain)
	ctx := e.ctx()
	check := func(name string, err error, code string) {
		t.Helper()
		var rf *sdk.RunFailedError
		if !errors.As(err, &rf) || rf.Code != code {
			t.Fatalf("%s: got %v, want a *RunFailedError of code %s", name, err, code)
		}
		if got, want := errors.Is(err, world.ErrLimitExceeded), code == world.CodeLimitExceeded; got != want {
			t.Fatalf("%s: errors.Is(err, world.ErrLimitExceeded) = %v, want %v (%v)", name, got, want, err)
		}
	}
	r1, err := bigWF.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r1.Result(ctx)
	check("step result over the payload limit", err, world.CodeLimitExceeded)
	r2, err := streamWF.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r2.Result(ctx)
	check("stream write over its bound", err, world.CodeLimitExceeded)
	r3, err := plainWF.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r3.Result(ctx)
	check("plain step error", err, world.CodeUserError)
}

// A start whose input is over the payload limit is refused in the
// caller's terms (the input's size and the limit), matching
// world.ErrLimitExceeded, and creates no run.
func TestStartInputOverLimitSaysSo(t *testing.T) {
	t.Parallel()
	wf := sdk.New("hookwait", func(_ sdk.Context, s string) (int, error) { return len(s), nil })
	e := newEnvWith(t, envOptions{limits: world.Limits{MaxPayload: 2 << 10}}, wf)
	ctx := e.ctx()
	in := strings.Repeat("i", 4<<10) // 4,098 bytes of JSON
	_, err := wf.Start(ctx, e.client, in)
	var le *world.LimitError
	if !errors.Is(err, world.ErrLimitExceeded) || !errors.As(err, &le) {
		t.Fatalf("got %v, want a refusal matching world.ErrLimitExceeded", err)
	}
	want := `workflow: start "hookwait": the input of 4098 bytes is over the limit of 2048 bytes`
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("message %q, want it to start %q", err, want)
	}
	runs, err := e.lw.ListRuns(ctx, &world.ListRunsParams{})
	if err != nil || len(runs.Items) != 0 {
		t.Fatalf("runs after the refused start: %v, %v; want none", runs, err)
	}
}
