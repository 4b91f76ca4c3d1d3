package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

func addStep(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
	var v [2]int
	if err := json.Unmarshal(in, &v); err != nil {
		return nil, err
	}
	return mustJSON(v[0] + v[1]), nil
}

func addTen(c *Context, in json.RawMessage) (json.RawMessage, error) {
	var n int
	_ = json.Unmarshal(in, &n)
	for _, k := range []int{2, 3, 5} {
		f := c.Step("add", mustJSON([2]int{n, k}))
		c.Await(f.Done)
		res, fail := f.Result()
		if fail != nil {
			return nil, &Failure{Data: fail}
		}
		_ = json.Unmarshal(res, &n)
	}
	return mustJSON(n), nil
}

func TestSerialSteps(t *testing.T) {
	t.Parallel()
	var cw *countingWorld
	h := newHarness(t, func(lw *localworld.World) world.World { cw = &countingWorld{World: lw}; return cw }, Config{})
	h.reg.step("add", 3, addStep)
	h.reg.wf("addTen", addTen)
	id := h.start("addTen", 123)
	before := cw.appends.Load() // read before any worker can run it
	h.work(1, nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != "133" {
		t.Fatalf("run = %s %s %+v", run.Status, run.Output, run.Error)
	}
	// 3 steps: 3+1 commits.
	if got := cw.appends.Load() - before; got != 4 {
		t.Errorf("appends = %d, want 4", got)
	}
}

func TestFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Options: Options{InlineConcurrency: 4}})
	h.reg.step("add", 3, addStep)
	h.reg.wf("fan", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		var fs []*Future
		for i := range 40 {
			fs = append(fs, c.Step("add", mustJSON([2]int{i, 1})))
		}
		c.Await(func() bool {
			for _, f := range fs {
				if !f.Done() {
					return false
				}
			}
			return true
		})
		sum := 0
		for _, f := range fs {
			r, fail := f.Result()
			if fail != nil {
				return nil, &Failure{Data: fail}
			}
			n, _ := strconv.Atoi(string(r))
			sum += n
		}
		return mustJSON(sum), nil
	})
	h.work(4, nil)
	id := h.start("fan", nil)
	run := h.wait(id)
	if run.Status != world.RunStatusCompleted || string(run.Output) != fmt.Sprint(40*41/2) {
		t.Fatalf("run = %s %s %+v", run.Status, run.Output, run.Error)
	}
	evs := h.events(id)
	if n := count(evs, world.EventStepCompleted); n != 40 {
		t.Errorf("step_completed = %d", n)
	}
	for _, e := range evs {
		if d, ok := e.Data.(*world.StepStarted); ok && d.Attempt != 1 {
			t.Errorf("attempt %d for %s", d.Attempt, e.CorrelationID)
		}
	}
	if n := count(evs, world.EventRunCompleted); n != 1 {
		t.Errorf("run_completed = %d", n)
	}
}
