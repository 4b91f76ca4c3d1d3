package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// outcomeWorld is appendLog that calls onOutcome after each committed
// Append recording a step's outcome.
type outcomeWorld struct {
	*appendLog
	onOutcome func()
}

func (o *outcomeWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := o.appendLog.Append(ctx, p)
	if err == nil && o.onOutcome != nil && count(eventsOf(p.Events), world.EventStepCompleted) > 0 {
		o.onOutcome()
	}
	return res, err
}

func eventsOf(in []world.EventInput) []world.Event {
	evs := make([]world.Event, len(in))
	for i, e := range in {
		evs[i] = world.Event{CorrelationID: e.CorrelationID, Data: e.Data}
	}
	return evs
}

// outcomeAppends returns the number of step outcomes of each committed
// Append that records any, in order.
func outcomeAppends(al *appendLog) []int {
	al.mu.Lock()
	defer al.mu.Unlock()
	var out []int
	for _, c := range al.commits {
		if n := count(eventsOf(c), world.EventStepCompleted); n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// A group's steps that finish while the first outcome is being gathered
// are recorded with it, in one Append, and a step still running then is
// not waited for: its outcome goes in a later Append. The first step runs
// at once; the others wait for the test, which releases them when the
// group lets its steps finish (settle) and waits for their outcomes. One
// step (slow) is released only once an outcome has committed. Before,
// the first outcome went out alone, before its siblings had run.
func TestGroupRecordsWhatFinishedMeanwhileTogether(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		slow bool
		want []int
	}{
		{"all finish", false, []int{6}},
		{"one slow", true, []int{5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ow *outcomeWorld
			h := newHarness(t, func(lw *localworld.World) world.World {
				ow = &outcomeWorld{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
				return ow
			}, Config{})
			runID, ids := groupRun(t, h, 6)
			gate, slowGate := make(chan struct{}), make(chan struct{})
			var once, slowOnce sync.Once
			open := func() { once.Do(func() { close(gate) }) }
			var slowOpen atomic.Bool
			openSlow := func() { slowOnce.Do(func() { slowOpen.Store(true); close(slowGate) }) }
			ow.onOutcome = func() { open(); openSlow() }
			h.reg.step("add", 2, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				info, _ := StepInfoFrom(ctx)
				switch {
				case info.StepID == ids[0]:
				case tc.slow && info.StepID == ids[5]:
					<-slowGate
				default:
					<-gate
				}
				return addStep(ctx, in)
			})
			h.eng.bg.settle = func(results <-chan outcome, left int) {
				open()
				want := left
				if tc.slow && !slowOpen.Load() {
					want = left - 1 // all but the slow one
				}
				for deadline := time.Now().Add(time.Minute); len(results) < want; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Errorf("%d outcomes arrived, want %d", len(results), want)
						return
					}
				}
			}
			if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
				t.Fatal(err)
			}
			run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
			if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "21" {
				t.Fatalf("run %+v %v, want completed with 21", run, err)
			}
			got := outcomeAppends(ow.appendLog)
			if len(got) != len(tc.want) || got[0] != tc.want[0] || len(got) > 1 && got[1] != tc.want[1] {
				t.Errorf("outcomes per Append %v, want %v", got, tc.want)
			}
		})
	}
}
