package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// TestMapRangeFanOutAcrossReplay: a fan-out over a map's keys followed by a
// sleep. After the wake-up the workflow is rebuilt by replay, and ranging
// over the map again visits the keys in another order: every key must get
// its own step's result, or the run must be stopped by a divergence that
// names both inputs' digests; it must never complete with another key's
// result.
func TestMapRangeFanOutAcrossReplay(t *testing.T) {
	t.Parallel()
	echo := workflow.NewStep("echo", func(_ context.Context, k string) (string, error) { return "result of " + k, nil })
	fan := workflow.New("mapFanOut", func(ctx workflow.Context, keys []string) (map[string]string, error) {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		fs := map[string]workflow.Future[string]{}
		for k := range m {
			fs[k] = echo.Go(ctx, k)
		}
		if err := workflow.Sleep(ctx, 30*time.Millisecond); err != nil {
			return nil, err
		}
		out := map[string]string{}
		for k, f := range fs {
			v, err := f.Get(ctx)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	})
	// No lingering: the sleep ends the invocation, and the next one replays.
	e := newEnvWith(t, envOptions{engine: workflow.EngineOptions{Linger: -1}}, fan, echo)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	ctx := e.ctx()
	diverged := 0
	for range 6 {
		run, err := fan.Start(ctx, e.client, keys)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run.Result(ctx)
		var rf *workflow.RunFailedError
		if errors.As(err, &rf) && rf.Code == world.CodeReplayDivergence {
			diverged++
			if !strings.Contains(err.Error(), "input digest") || !strings.Contains(err.Error(), `step "echo"`) {
				t.Errorf("divergence %q names no input digests", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if out[k] != "result of "+k {
				t.Fatalf("key %s got %q: another key's result", k, out[k])
			}
		}
	}
	t.Logf("%d of 6 runs diverged", diverged)
}
