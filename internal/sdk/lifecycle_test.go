package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// countingMetrics is a worker.Metrics that remembers what it was told.
type countingMetrics struct {
	mu        sync.Mutex
	counts    map[string]int
	durations map[string]int
}

func (m *countingMetrics) Count(name string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[name] += n
}

func (m *countingMetrics) Duration(name string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d >= 0 {
		m.durations[name]++
	}
}

var flakyOnce = sdk.NewStep("flaky-once", func(ctx context.Context, in string) (string, error) {
	if m, _ := sdk.StepMetadataFrom(ctx); m.Attempt == 1 {
		return "", errors.New("gateway said 503")
	}
	if in == "fail" {
		return "", sdk.Fatal(errors.New("card declined"))
	}
	return "ok", nil
}, sdk.StepOptions{Backoff: func(int) time.Duration { return 5 * time.Millisecond }})

var lifecycleWf = sdk.New("lifecycle", func(ctx sdk.Context, in string) (string, error) {
	if in == "wait" {
		if err := sdk.Sleep(ctx, time.Hour); err != nil {
			return "", err
		}
	}
	return flakyOnce.Call(ctx, in)
})

// TestLifecycleLogsAndMetrics: the worker's logger gets a line for each
// run's start and end and for each failed step attempt, with the run and
// step, once each; Metrics counts the same commits.
func TestLifecycleLogsAndMetrics(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	m := &countingMetrics{counts: map[string]int{}, durations: map[string]int{}}
	e := newEnvWith(t, envOptions{
		logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		engine: sdk.EngineOptions{Metrics: m},
	}, lifecycleWf, flakyOnce)
	ctx := e.ctx()
	ok, err := lifecycleWf.Start(ctx, e.client, "go")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ok.Result(ctx); err != nil || got != "ok" {
		t.Fatalf("ok run: %q, %v", got, err)
	}
	bad, err := lifecycleWf.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Result(ctx); err == nil {
		t.Fatal("the failing run completed")
	}
	sleeper, err := lifecycleWf.Start(ctx, e.client, "wait")
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(sleeper.ID(), world.EventWaitCreated)
	if err := e.worker.Client().Cancel(ctx, sleeper.ID(), "changed my mind"); err != nil {
		t.Fatal(err)
	}
	// A run's end is visible before the worker that committed it has
	// logged and counted it: stop the worker (which waits for its
	// deliveries) before reading the log and the metrics.
	e.stop()

	type entry struct {
		Level, Msg, Run, Workflow, Step, StepID, Error, Code, Reason string
		Attempt                                                      int
	}
	var lines []entry
	for line := range strings.Lines(buf.String()) {
		var en entry
		if json.Unmarshal([]byte(line), &en) == nil && en.Run != "" {
			lines = append(lines, en)
		}
	}
	find := func(msg, run string) []entry {
		var out []entry
		for _, en := range lines {
			if en.Msg == msg && en.Run == run {
				out = append(out, en)
			}
		}
		return out
	}
	for _, tc := range []struct {
		msg, run, level string
		check           func(entry) bool
	}{
		{"run started", ok.ID(), "INFO", func(en entry) bool { return en.Workflow == "lifecycle" }},
		{"step retrying", ok.ID(), "WARN", func(en entry) bool {
			return en.Step == "flaky-once" && en.Attempt == 1 && en.StepID != "" && strings.Contains(en.Error, "gateway said 503")
		}},
		{"run completed", ok.ID(), "INFO", nil},
		{"step failed", bad.ID(), "WARN", func(en entry) bool { return en.Attempt == 2 && strings.Contains(en.Error, "card declined") }},
		{"run failed", bad.ID(), "WARN", func(en entry) bool { return en.Code == "USER_ERROR" && strings.Contains(en.Error, "card declined") }},
		{"run cancelled", sleeper.ID(), "INFO", func(en entry) bool { return en.Reason == "changed my mind" }},
	} {
		got := find(tc.msg, tc.run)
		if len(got) != 1 {
			t.Errorf("%q for run %s logged %d times; want once. Log:\n%s", tc.msg, tc.run, len(got), buf.String())
			continue
		}
		if got[0].Level != tc.level || (tc.check != nil && !tc.check(got[0])) {
			t.Errorf("%q = %+v", tc.msg, got[0])
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]int{
		engine.MetricRunsStarted: 3, engine.MetricRunsCompleted: 1, engine.MetricRunsFailed: 1,
		engine.MetricStepAttempts: 4, engine.MetricStepAttemptFailures: 3, engine.MetricStepsFailed: 1,
	}
	for name, n := range want {
		if m.counts[name] != n {
			t.Errorf("metric %s = %d, want %d (all: %v)", name, m.counts[name], n, m.counts)
		}
	}
	if m.durations[engine.MetricStepLatency] != 1 || m.durations[engine.MetricRunDuration] != 2 {
		t.Errorf("durations = %v; want one step latency and two run durations", m.durations)
	}
}
