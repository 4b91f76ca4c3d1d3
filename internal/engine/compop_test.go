package engine

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// compOp is a completed step whose compensation was asked for (wanted:
// the order it was asked in), in the given state.
func compOp(id string, wanted int64, c compState) *op {
	c.wanted = wanted
	return &op{kind: opStep, id: id, index: int(wanted), settled: true, compLogged: "undo", comp: &c}
}

// TestScheduleComps: a compensation the workflow asked for is runnable when
// it has not started, when its retry is due or when the lease of an attempt
// another invocation runs has expired, in the order asked; a retry ahead
// is a timer the session wakes for, and a live lease one too (not a mere
// lease check); one running here or ended is neither.
func TestScheduleComps(t *testing.T) {
	t.Parallel()
	slack := int(leaseCheckSlack / time.Millisecond)
	tests := []struct {
		name     string
		comps    []*op
		inflight []string
		runnable []string
		next     time.Time
	}{
		{name: "not started", comps: []*op{compOp("s2", 2, compState{}), compOp("s1", 1, compState{})}, runnable: []string{"s1", "s2"}},
		{name: "retry ahead", comps: []*op{compOp("s1", 1, compState{started: true, retryAfter: at(200)})}, next: at(200)},
		{name: "retry due", comps: []*op{compOp("s1", 1, compState{started: true, retryAfter: at(-1)})}, runnable: []string{"s1"}},
		{name: "live lease elsewhere", comps: []*op{compOp("s1", 1, compState{started: true, running: true, leaseUntil: at(500)})}, next: at(500 + slack)},
		{name: "expired lease: taken over", comps: []*op{compOp("s1", 1, compState{started: true, running: true, leaseUntil: at(-1)})}, runnable: []string{"s1"}},
		{name: "running here", comps: []*op{compOp("s1", 1, compState{started: true, running: true, leaseUntil: at(500)})}, inflight: []string{"s1"}},
		{name: "ended", comps: []*op{compOp("s1", 1, compState{started: true, settled: true})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := schedule{now: t0, comps: opsByID(tt.comps...), inflight: map[string]context.CancelFunc{}}
			for _, id := range tt.inflight {
				sc.inflight[id] = func() {}
			}
			if got := ids(sc.runnableComps()); !slices.Equal(got, tt.runnable) && len(got)+len(tt.runnable) > 0 {
				t.Errorf("runnableComps = %v, want %v", got, tt.runnable)
			}
			if got := sc.next(); !got.Equal(tt.next) {
				t.Errorf("next = %v, want %v", got, tt.next)
			}
			if !tt.next.IsZero() && sc.isLeaseCheck(tt.next) {
				t.Errorf("a compensation's timer is taken for a lease check")
			}
		})
	}
}

// TestCompensationInput: a compensation's input is the step's input and
// result, null when absent, as workflow.Compensation decodes it.
func TestCompensationInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, result, want string }{
		{`{"n":1}`, `"ok"`, `{"Input":{"n":1},"Result":"ok"}`},
		{``, ``, `{"Input":null,"Result":null}`},
	} {
		if got := string(compensationInput([]byte(tt.in), []byte(tt.result))); got != tt.want {
			t.Errorf("compensationInput(%s, %s) = %s, want %s", tt.in, tt.result, got, tt.want)
		}
	}
}

// TestRefuseVersionOfCompensatingRun: an engine pinned to other versions
// leaves a finished run whose compensations are owed to an executor of
// the run's version (which registers its compensation steps), while it
// still takes a finished run with nothing owed to its rest.
func TestRefuseVersionOfCompensatingRun(t *testing.T) {
	t.Parallel()
	refusals := &countMetrics{}
	h := newHarness(t, nil, Config{AcceptVersion: func(v string) bool { return v == "v2" }, Options: Options{Metrics: refusals}})
	h.reg.wf("saga", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	ctx := context.Background()
	for _, compensate := range []bool{true, false} {
		id := h.ids.New(world.PrefixRun)
		step := h.ids.New(world.PrefixStep)
		_, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{
			{Data: &world.RunCreated{WorkflowName: "saga", Input: mustJSON("x"), Version: "v1"}},
			{Data: &world.RunStarted{}},
			{CorrelationID: step, Data: &world.StepCreated{StepName: "charge", Compensation: "refund"}},
			{CorrelationID: step, Data: &world.StepStarted{StepName: "charge"}},
			{CorrelationID: step, Data: &world.StepCompleted{StepName: "charge", Result: mustJSON(1)}},
			{Data: &world.RunFailed{Error: &world.ErrorData{Message: "no"}, Compensate: compensate}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		before := refusals.get(MetricMessagesRefused)
		if err := h.eng.HandleDelivery(ctx, world.Message{RunID: id, RequestedAt: time.Now()}, 1); err != nil {
			t.Fatal(err)
		}
		refused := refusals.get(MetricMessagesRefused) > before
		r, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id})
		if refused != compensate || r.Deactivated() == compensate || count(h.events(id), world.EventCompStarted) != 0 {
			t.Errorf("compensate=%v: refused %v, deactivated %v", compensate, refused, r.Deactivated())
		}
	}
}
