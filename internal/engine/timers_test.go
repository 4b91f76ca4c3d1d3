package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// The timers a session's scheduler finds among the steps that may have one
// (next with the replay's stepOrder) are those it finds among all the open
// steps (next without it), at every point of a replayed log in which steps
// start inline or queued, retry, are taken over and end, whatever runs
// here, at times before, at and after the steps' retries and leases.
func TestScheduleNextFindsEveryTimer(t *testing.T) {
	t.Parallel()
	const n = 40
	wf := &Workflow{Name: "fan", Fn: func(c *Context, _ json.RawMessage) (json.RawMessage, error) {
		fs := make([]*Future, n)
		for i := range n {
			fs[i] = c.Step("add", mustJSON([2]int{i, 1}))
		}
		awaitAll(c, fs...)
		return nil, nil
	}}
	const runID = "wrun_timers"
	r := newReplayer(wf, slog.New(slog.DiscardHandler))
	defer r.stop()
	seq := int64(0)
	feed := func(corr string, d world.EventData) {
		seq++
		r.consume(&world.Event{Seq: seq, RunID: runID, CorrelationID: corr, CreatedAt: t0, Data: d})
	}
	feed("", &world.RunCreated{WorkflowName: wf.Name})
	feed("", &world.RunStarted{})
	det := newDetSource(runID)
	ids := make([]string, n)
	attempts := make([]int, n)
	for i := range ids {
		ids[i] = det.id(world.PrefixStep)
		feed(ids[i], &world.StepCreated{StepName: "add", Input: mustJSON([2]int{i, 1})})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ms := func() time.Time { return at(rng.IntN(2000) - 500) }
	for range 400 {
		i := rng.IntN(n)
		if op := r.byID[ids[i]]; op == nil || op.settled {
			continue
		}
		switch rng.IntN(4) {
		case 0, 1:
			attempts[i]++
			feed(ids[i], &world.StepStarted{StepName: "add", Attempt: attempts[i], LeaseExpiresAt: ms(), Queued: rng.IntN(2) == 0})
		case 2:
			feed(ids[i], &world.StepRetrying{StepName: "add", Error: &world.ErrorData{Message: "again"}, RetryAfter: ms()})
		default:
			feed(ids[i], &world.StepCompleted{StepName: "add", Result: mustJSON(i)})
		}
		running := map[string]context.CancelFunc{}
		for _, id := range ids {
			if rng.IntN(8) == 0 {
				running[id] = func() {}
			}
		}
		for _, now := range []time.Time{at(-600), at(0), at(700), ms()} {
			fast := schedule{now: now, steps: r.openSteps, inflight: running, order: &r.stepOrder}
			full := fast
			full.order = nil
			if got, want := fast.next(), full.next(); !got.Equal(want) {
				t.Fatalf("after event %d, at %v: next = %v among the steps that may have a timer, %v among all", seq, now, got, want)
			}
		}
	}
	if len(r.openSteps) == 0 || len(r.openSteps) == n {
		t.Fatalf("%d open steps at the end, want some settled and some open", len(r.openSteps))
	}
}
