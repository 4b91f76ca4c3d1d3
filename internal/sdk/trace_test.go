package sdk_test

import (
	"context"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinflow/skein/internal/sdk"
)

var traceStep = sdk.NewStep("traced-step", func(ctx context.Context, n int) (int, error) {
	// The step's context holds its attempt's span: the user's spans nest.
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return 0, sdk.Fatal(errNoSpan)
	}
	return n + 1, nil
})

var errNoSpan = workflowError("the step's context holds no span")

type workflowError string

func (e workflowError) Error() string { return string(e) }

var tracedWf = sdk.New("traced", func(ctx sdk.Context, n int) (int, error) {
	n, err := traceStep.Call(ctx, n)
	if err != nil {
		return 0, err
	}
	if err := sdk.Sleep(ctx, 30*time.Millisecond); err != nil {
		return 0, err
	}
	// A fan-out wider than the inline concurrency: some steps run from
	// queue messages, outside the session.
	futures := make([]sdk.Future[int], 4)
	for i := range futures {
		futures[i] = traceStep.Go(ctx, n+i)
	}
	sum := 0
	for _, f := range futures {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
})

// TestTracesFollowTheRun: a run started under a span continues its trace:
// every session (skein.run) and step attempt (skein.step) of the run, across
// the sessions a sleep and queued steps split it into, is in the starter's
// trace, with the run, workflow, step and attempt as attributes; the
// message spans, in the worker's own traces, are linked. A run started
// outside any span still has all its sessions in one trace.
func TestTracesFollowTheRun(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	// The clock moves only when the test moves it: the sleep cannot end
	// inside the session that starts it, however slow that session is.
	clock := &testClock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	e := newEnvWith(t, envOptions{concurrency: 4, now: clock.Now,
		engine: sdk.EngineOptions{TracerProvider: tp, InlineConcurrency: 2},
		knobs:  []knobs.Option{knobs.WithLinger(-1), knobs.WithBackgroundDelay(-1)}}, tracedWf, traceStep)
	ctx := e.ctx()

	reqCtx, req := tp.Tracer("test").Start(ctx, "POST /orders")
	run, err := tracedWf.Start(reqCtx, e.client, 1)
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := tracedWf.Start(ctx, e.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Once both runs' first sessions have ended (asleep), end their sleeps.
	sessionsOf := func(runID string) int {
		n := 0
		for _, s := range exp.GetSpans() {
			if s.Name == "skein.run" && attr(s, "skein.run.id") == runID {
				n++
			}
		}
		return n
	}
	waitFor(t, "the runs' first sessions to end", func() bool { return sessionsOf(run.ID()) > 0 && sessionsOf(plain.ID()) > 0 })
	clock.Set(clock.Now().Add(time.Minute))
	if got, err := run.Result(ctx); err != nil || got != 3+4+5+6 {
		t.Fatalf("result %d, %v", got, err)
	}
	if _, err := plain.Result(ctx); err != nil {
		t.Fatal(err)
	}
	// A run's result is visible before the session that committed it has
	// ended its span: stop the worker, which waits for its sessions.
	e.stop()

	spans := exp.GetSpans()
	byRun := func(runID string) (sessions, steps []tracetest.SpanStub) {
		for _, s := range spans {
			if attr(s, "skein.run.id") != runID {
				continue
			}
			switch {
			case s.Name == "skein.run":
				sessions = append(sessions, s)
			case strings.HasPrefix(s.Name, "skein.step "):
				steps = append(steps, s)
			}
		}
		return sessions, steps
	}
	sessions, steps := byRun(run.ID())
	if len(sessions) < 2 || len(steps) != 5 {
		t.Fatalf("%d session spans and %d step spans; want 2 or more sessions (the sleep) and 5 steps", len(sessions), len(steps))
	}
	want := req.SpanContext().TraceID()
	sessionIDs := map[trace.SpanID]bool{}
	for _, s := range sessions {
		if s.SpanContext.TraceID() != want || s.Parent.SpanID() != req.SpanContext().SpanID() {
			t.Errorf("session span %s is in trace %s under %s; want the request's trace %s under its span", s.SpanContext.SpanID(), s.SpanContext.TraceID(), s.Parent.SpanID(), want)
		}
		if attr(s, "skein.workflow.name") != "traced" {
			t.Errorf("session span attributes %v", s.Attributes)
		}
		if len(s.Links) == 0 {
			t.Errorf("session span without a link to its message's span")
		}
		sessionIDs[s.SpanContext.SpanID()] = true
	}
	var inline, queued int
	for _, s := range steps {
		if s.SpanContext.TraceID() != want {
			t.Errorf("step span in trace %s; want %s", s.SpanContext.TraceID(), want)
		}
		if attr(s, "skein.step.name") != "traced-step" || attr(s, "skein.step.attempt") != "1" || attr(s, "skein.step.id") == "" {
			t.Errorf("step span attributes %v", s.Attributes)
		}
		if sessionIDs[s.Parent.SpanID()] {
			inline++
		} else {
			queued++
		}
	}
	if inline == 0 || queued == 0 {
		t.Errorf("%d step spans under a session, %d from queue messages; want both", inline, queued)
	}
	var messages int
	for _, s := range spans {
		if s.Name == "skein.message" && attr(s, "skein.run.id") == run.ID() {
			messages++
		}
	}
	if messages < 2 {
		t.Errorf("%d message spans; want one per message handled", messages)
	}

	plainSessions, plainSteps := byRun(plain.ID())
	if len(plainSessions) < 2 {
		t.Fatalf("%d session spans for the run started outside a span", len(plainSessions))
	}
	tid := plainSessions[0].SpanContext.TraceID()
	for _, s := range append(plainSessions, plainSteps...) {
		if s.SpanContext.TraceID() != tid || tid == want {
			t.Errorf("span %s of the untraced run in trace %s; want all in one trace of its own", s.Name, s.SpanContext.TraceID())
		}
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
