package sdk_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var logStep = sdk.NewStep("log-step", func(ctx context.Context, n int) (int, error) { return n, nil })

var logSteps = sdk.New("log-steps", func(ctx sdk.Context, _ struct{}) (int, error) {
	ctx.Logger().Info("L:start")
	if _, err := logStep.Call(ctx, 1); err != nil {
		return 0, err
	}
	ctx.Logger().Info("L:after-step")
	if err := sdk.Sleep(ctx, 50*time.Millisecond); err != nil {
		return 0, err
	}
	ctx.Logger().Info("L:after-sleep")
	return 0, nil
})

var logOnly = sdk.New("log-only", func(ctx sdk.Context, _ struct{}) (int, error) {
	ctx.Logger().Info("L:only")
	return 0, nil
})

var logHook = sdk.New("log-hook", func(ctx sdk.Context, token string) (int, error) {
	ctx.Logger().Info("L:before-hook")
	h := sdk.NewHook[int](ctx, sdk.HookOptions{Token: token})
	n, err := h.Receive(ctx)
	if err != nil {
		return 0, err
	}
	ctx.Logger().Info("L:after-receive")
	if _, err := logStep.Call(ctx, n); err != nil {
		return 0, err
	}
	ctx.Logger().Info("L:after-step")
	return n, nil
})

// TestLoggerPrintsEachLineOnce: the workflow logger is silent only while
// the code re-executes what the log recorded. Every line of these runs is
// printed exactly once: at the start of a first run, in a workflow that
// only logs, before a hook, after a payload arrives, after steps and waits.
func TestLoggerPrintsEachLineOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(ctx context.Context, e *env) error
		lines []string
	}{
		{"steps and sleep", func(ctx context.Context, e *env) error {
			run, err := logSteps.Start(ctx, e.client, struct{}{})
			if err == nil {
				_, err = run.Result(ctx)
			}
			return err
		}, []string{"L:start", "L:after-step", "L:after-sleep"}},
		{"only logs", func(ctx context.Context, e *env) error {
			run, err := logOnly.Start(ctx, e.client, struct{}{})
			if err == nil {
				_, err = run.Result(ctx)
			}
			return err
		}, []string{"L:only"}},
		{"hook", func(ctx context.Context, e *env) error {
			run, err := logHook.Start(ctx, e.client, "log-hook-token")
			if err != nil {
				return err
			}
			for {
				if _, err = e.client.ResumeHook(ctx, "log-hook-token", 5); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			_, err = run.Result(ctx)
			return err
		}, []string{"L:before-hook", "L:after-receive", "L:after-step"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf lockedBuffer
			e := newEnvWith(t, envOptions{logger: slog.New(slog.NewTextHandler(&buf, nil))}, logSteps, logOnly, logHook, logStep)
			if err := tc.start(e.ctx(), e); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, l := range tc.lines {
				if n := strings.Count(out, "msg="+l+" "); n != 1 {
					t.Errorf("line %s printed %d times, want once; log:\n%s", l, n, out)
				}
			}
		})
	}
}
