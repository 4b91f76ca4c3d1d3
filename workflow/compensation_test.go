package workflow_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// journal records the side effects of steps and compensations, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
}

func (j *journal) lines() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.log)
}

// sagaSteps defines, under prefix, steps "a", "b", "c" that record "do x"
// and each declare the compensation "undo x"; c fails for good when its
// input is "fail", and "undo <failUndo>" fails for good.
func sagaSteps(prefix, failUndo string, j *journal) (steps []*workflow.Step[string, string], defs []workflow.Definition) {
	for _, x := range []string{"a", "b", "c"} {
		undo := workflow.NewStep(prefix+"undo-"+x, func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
			if x == failUndo {
				return struct{}{}, workflow.Fatal(errors.New("refund refused"))
			}
			j.add("undo " + c.Result + " of " + c.Input)
			return struct{}{}, nil
		}, workflow.StepOptions{MaxRetries: workflow.NoRetries})
		step := workflow.NewStep(prefix+x, func(ctx context.Context, in string) (string, error) {
			if x == "c" && in == "fail" {
				return "", workflow.Fatal(errors.New("out of stock"))
			}
			j.add("do " + x)
			return x + "-done", nil
		})
		steps = append(steps, workflow.WithCompensation(step, undo))
		defs = append(defs, undo, step)
	}
	return steps, defs
}

// TestSagaCompensatesInReverse: a saga of three steps whose third fails
// compensates the first two, in reverse order, once each, even when the
// workflow calls Compensate twice; a failed step is not compensated; the
// workflow continues after Compensate and returns a result.
func TestSagaCompensatesInReverse(t *testing.T) {
	t.Parallel()
	j := &journal{}
	steps, defs := sagaSteps("saga-", "", j)
	saga := workflow.New("saga", func(ctx workflow.Context, in string) (string, error) {
		for _, s := range steps {
			if _, err := s.Call(ctx, in); err != nil {
				if cerr := workflow.Compensate(ctx); cerr != nil {
					return "", cerr
				}
				if cerr := workflow.Compensate(ctx); cerr != nil { // nothing left
					return "", cerr
				}
				return "rolled back", nil
			}
		}
		return "done", nil
	})
	e := newEnv(t, append(defs, saga)...)
	ctx := e.ctx()
	run, err := saga.Start(ctx, e.client, "fail")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Result(ctx)
	if err != nil || out != "rolled back" {
		t.Fatalf("saga = %q, %v", out, err)
	}
	want := []string{"do a", "do b", "undo b-done of fail", "undo a-done of fail"}
	if got := j.lines(); !slices.Equal(got, want) {
		t.Errorf("journal = %q, want %q", got, want)
	}
	var undone []string
	for _, s := range e.steps(run.ID()) {
		if s.Status == world.StepStatusCompleted && len(s.StepName) > len("saga-undo-") && s.StepName[:len("saga-undo-")] == "saga-undo-" {
			undone = append(undone, s.StepName)
		}
	}
	slices.Sort(undone)
	if !slices.Equal(undone, []string{"saga-undo-a", "saga-undo-b"}) {
		t.Errorf("completed compensation steps in the log = %q", undone)
	}
}

