package engine

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// listCounter counts ListEventsByCorrelation calls.
type listCounter struct {
	*appendLog
	lists atomic.Int64
}

func (l *listCounter) ListEventsByCorrelation(ctx context.Context, p *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	l.lists.Add(1)
	return l.appendLog.ListEventsByCorrelation(ctx, p)
}

// A group that must tell whether a step's attempt was started by a queue
// executor (queuedAttempt: for a step it finds running under a live lease,
// or for steps all found ended) answers from the step_started this
// process appended for it (knownsteps.go) rather than read the step's
// events: a session here that took up queued steps, or another group here,
// appended them. Here steps 1 and 2 were taken up inline (their messages
// are dropped: the session sees to them) and step 3 was started by another
// group (queued again for its lease's expiry); then, all six ended, a
// delivery finds them so and is late (see delivery): step 3's attempt was
// a queue executor's, so it covers the run lease's holder.
func TestGroupKnowsWhoStartedAStep(t *testing.T) {
	t.Parallel()
	var lc *listCounter
	h := newHarness(t, func(lw *localworld.World) world.World {
		lc = &listCounter{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
		return lc
	}, Config{})
	runID, ids := groupRun(t, h, 6)
	ctx := context.Background()
	appendNoted := func(evs ...world.EventInput) {
		t.Helper()
		res, err := h.lw.Append(ctx, &world.AppendParams{RunID: runID, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		h.eng.known.note(runID, res)
	}
	started := func(id string, queued bool) world.EventInput {
		return world.EventInput{CorrelationID: id, Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Hour, Queued: queued}}
	}
	appendNoted(started(ids[1], false), started(ids[2], false), started(ids[3], true))
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[1], StepIDs: ids[2:4]}); err != nil {
		t.Fatal(err)
	}
	if n := lc.lists.Load(); n != 0 {
		t.Errorf("%d ListEventsByCorrelation calls for steps started here, want none", n)
	}
	msgs := lc.snapshot()
	if len(msgs) != 1 || msgs[0].StepID != ids[3] || msgs[0].NotBefore.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("messages %+v, want step 3 queued again for its lease's expiry", msgs)
	}
	for i, id := range ids {
		if i == 0 || i > 3 {
			appendNoted(started(id, false))
		}
	}
	var done []world.EventInput
	for _, id := range ids {
		done = append(done, world.EventInput{CorrelationID: id, Data: &world.StepCompleted{StepName: "add", Result: mustJSON(1)}})
	}
	appendNoted(done...)
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	if n := lc.lists.Load(); n != 0 {
		t.Errorf("%d ListEventsByCorrelation calls for steps started here, want none", n)
	}
	if msgs := lc.snapshot(); len(msgs) != 2 || !slices.ContainsFunc(msgs, func(m world.Message) bool { return m.StepID == "" }) {
		t.Errorf("messages %+v, want step 3's and a continuation covering the holder (the delivery is late)", msgs)
	}
}

// A group finds its steps' trace origin (runParent: decoding the run's
// execution context, or hashing its ID) once, not once per step, and each
// step's span is still the origin's child, linked to the message's span.
func TestGroupFindsItsRunsTraceOnce(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, nil, Config{Options: Options{TracerProvider: tp}})
	runID, ids := groupRun(t, h, 6)
	ctx := context.Background()
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	if n := h.eng.spans.parents.Load(); n != 1 {
		t.Errorf("the run's trace origin found %d times for a group of 6, want once", n)
	}
	origin := runTrace(runID)
	steps := 0
	for _, sp := range rec.Ended() {
		if !strings.HasPrefix(sp.Name(), "skein.step ") {
			continue
		}
		steps++
		if p := sp.Parent(); p.TraceID() != origin.TraceID() || p.SpanID() != origin.SpanID() || !p.IsRemote() || len(sp.Links()) != 1 {
			t.Errorf("step span %s: parent %v, %d links; want the run's origin %v, linked to the message", sp.Name(), sp.Parent(), len(sp.Links()), origin)
		}
	}
	if steps != 6 {
		t.Errorf("%d step spans, want 6", steps)
	}
}
