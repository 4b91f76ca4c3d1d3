package sdk_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
)

var panicky = sdk.NewStep("panicky", func(ctx context.Context, _ struct{}) (int, error) {
	if m, _ := sdk.StepMetadataFrom(ctx); m.Attempt < 2 {
		panic("step exploded")
	}
	return 1, nil
}, sdk.StepOptions{Backoff: func(int) time.Duration { return time.Millisecond }})

// panicsLate panics after a step and a sleep, so that the engine replays it
// before the panic.
var panicsLate = sdk.New("panics-late", func(ctx sdk.Context, _ struct{}) (int, error) {
	if _, err := panicky.Call(ctx, struct{}{}); err != nil {
		return 0, err
	}
	if err := sdk.Sleep(ctx, 20*time.Millisecond); err != nil {
		return 0, err
	}
	panic("workflow exploded")
})

// TestPanicsLogged: a step's panic and a workflow's panic reach the
// worker's log, once each, at ERROR, with the run, the step and the stack.
func TestPanicsLogged(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	e := newEnvWith(t, envOptions{logger: slog.New(slog.NewJSONHandler(&buf, nil))}, panicsLate, panicky)
	ctx := e.ctx()
	run, err := panicsLate.Start(ctx, e.client, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err == nil || !strings.Contains(err.Error(), "workflow exploded") {
		t.Fatalf("result: %v", err)
	}
	// The run's end is visible before the worker that committed it has
	// logged it: stop the worker (which waits for its deliveries) first.
	e.stop()
	type entry struct {
		Level, Msg, Run, Step, Panic, Stack string
	}
	got := map[string][]entry{}
	for line := range strings.Lines(buf.String()) {
		var en entry
		if json.Unmarshal([]byte(line), &en) == nil && strings.Contains(en.Msg, "panicked") {
			got[en.Msg] = append(got[en.Msg], en)
		}
	}
	for _, tc := range []struct {
		msg, step, panic, frame string
	}{
		{"engine: step panicked", "panicky", "step panicked: step exploded", "sdk_test.init"},
		{"engine: workflow panicked", "", "workflow panicked: workflow exploded", "sdk_test.init"},
	} {
		es := got[tc.msg]
		if len(es) != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", tc.msg, len(es), buf.String())
			continue
		}
		if en := es[0]; en.Level != "ERROR" || en.Run != run.ID() || en.Step != tc.step || en.Panic != tc.panic || !strings.Contains(en.Stack, tc.frame) {
			t.Errorf("%q logged as %+v", tc.msg, en)
		}
	}
}
