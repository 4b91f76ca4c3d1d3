package encrypt_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skeinflow/skein/world"
)

const (
	stepA = "step_01JABCDEFGHJKMNPQRSTVWXYZA"
	stepB = "step_01JABCDEFGHJKMNPQRSTVWXYZB"
)

// TestSealedPayloadsCannotBeSwapped: a sealed payload opens only where it
// was sealed: step A's result in step B's item, a step's input as its
// result, a step's result as the run's output, another run's output, are
// typed errors on every read; the run's own bytes read back.
func TestSealedPayloadsCannotBeSwapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA, runB)
	get := func(run, step string) *world.Step {
		s, err := tw.World.GetStep(ctx, &world.GetStepParams{RunID: run, StepID: step})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := get(runA, stepA), get(runA, stepB)
	otherRun, err := tw.World.GetRun(ctx, &world.GetRunParams{RunID: runB})
	if err != nil {
		t.Fatal(err)
	}

	// Step A's result in step B's item, and in step B's step_completed.
	tw.set(nil, func(s *world.Step) {
		if s.RunID == runA && s.StepID == stepB {
			s.Output = a.Output
		}
	}, func(e *world.Event) {
		if d, ok := e.Data.(*world.StepCompleted); ok && e.RunID == runA && e.CorrelationID == stepB {
			e.Data = &world.StepCompleted{StepName: d.StepName, Result: a.Output}
		}
	})
	r := reader(t, tw, keys)
	_, err = r.GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepB})
	wantTampered(t, "step A's result as step B's: GetStep", err)
	_, err = r.ListEvents(ctx, &world.ListEventsParams{RunID: runA})
	wantTampered(t, "step A's result as step B's: ListEvents", err)
	if s, err := r.GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepA}); err != nil || string(s.Output) != `"result-a"` {
		t.Errorf("step A itself: %s, %v", s.Output, err)
	}

	// Step B's input as its result.
	tw.set(nil, func(s *world.Step) {
		if s.StepID == stepB {
			s.Output = b.Input
		}
	}, nil)
	_, err = reader(t, tw, keys).GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepB})
	wantTampered(t, "a step's input as its result", err)

	// A step's result as the run's output; another run's output.
	for name, out := range map[string]json.RawMessage{"step result as run output": a.Output, "run B's output in run A": otherRun.Output} {
		tw.set(func(r *world.Run) {
			if r.RunID == runA {
				r.Output = out
			}
		}, nil, nil)
		_, err = reader(t, tw, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
		wantTampered(t, name, err)
	}

	tw.set(nil, nil, nil)
	if s, err := reader(t, tw, keys).GetStep(ctx, &world.GetStepParams{RunID: runA, StepID: stepB}); err != nil || string(s.Output) != `"result-b"` {
		t.Fatalf("untouched step B: %s, %v", s.Output, err)
	}
}

// TestSealedHookPayloadsCannotBeSwapped: a payload delivered to one hook
// does not open as another hook's.
func TestSealedHookPayloadsCannotBeSwapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t)
	const hookX, hookY = "hook_01JABCDEFGHJKMNPQRSTVWXYZX", "hook_01JABCDEFGHJKMNPQRSTVWXYZY"
	w := reader(t, tw, keys)
	appendAll(t, w, runA,
		world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}},
		world.EventInput{Data: &world.RunStarted{}},
		world.EventInput{CorrelationID: hookX, Data: &world.HookCreated{Token: "tok-x"}},
		world.EventInput{CorrelationID: hookY, Data: &world.HookCreated{Token: "tok-y"}},
		world.EventInput{CorrelationID: hookX, Data: &world.HookReceived{Token: "tok-x", Payload: json.RawMessage(`"approve"`)}},
		world.EventInput{CorrelationID: hookY, Data: &world.HookReceived{Token: "tok-y", Payload: json.RawMessage(`"reject"`)}},
	)
	var xPayload json.RawMessage
	page, err := tw.World.ListEventsByCorrelation(ctx, &world.ListEventsByCorrelationParams{RunID: runA, CorrelationID: hookX})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Items {
		if d, ok := ev.Data.(*world.HookReceived); ok {
			xPayload = d.Payload
		}
	}
	tw.set(nil, nil, func(e *world.Event) {
		if _, ok := e.Data.(*world.HookReceived); ok && e.CorrelationID == hookY {
			e.Data = &world.HookReceived{Token: "tok-y", Payload: xPayload}
		}
	})
	_, err = reader(t, tw, keys).ListEvents(ctx, &world.ListEventsParams{RunID: runA})
	wantTampered(t, "hook X's payload as hook Y's", err)
}

// streamSwap is a store whose stream "b" holds stream "a"'s chunks.
type streamSwap struct{ world.World }

func (w streamSwap) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if p.Name == "b" {
		q := *p
		q.Name = "a"
		return w.World.ReadStream(ctx, &q)
	}
	return w.World.ReadStream(ctx, p)
}

// TestSealedStreamChunksCannotBeSwapped: stream a's chunks do not open as
// stream b's; each stream reads back its own.
func TestSealedStreamChunksCannotBeSwapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t)
	w := reader(t, tw, keys)
	appendAll(t, w, runA, world.EventInput{Data: &world.RunCreated{WorkflowName: "wf"}}, world.EventInput{Data: &world.RunStarted{}})
	for _, name := range []string{"a", "b"} {
		if err := w.WriteStream(ctx, &world.WriteStreamParams{RunID: runA, Name: name, Chunks: [][]byte{[]byte("chunk of " + name)}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := reader(t, tw, keys).ReadStream(ctx, &world.ReadStreamParams{RunID: runA, Name: "b"})
	if err != nil || len(page.Chunks) != 1 || string(page.Chunks[0].Data) != "chunk of b" {
		t.Fatalf("stream b: %+v, %v", page, err)
	}
	_, err = reader(t, streamSwap{tw}, keys).ReadStream(ctx, &world.ReadStreamParams{RunID: runA, Name: "b"})
	wantTampered(t, "stream a's chunk as stream b's", err)
}
