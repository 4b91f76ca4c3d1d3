package encrypt_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestPoisonedFirstReadCachesNothing: a process whose first read of run B
// meets a payload carrying run A's data key (B's run_created input
// replaced by A's, which wraps A's key) gets a typed error, and keeps no
// key from it: its next write to B is sealed under B's own key, which a
// clean process then opens.
func TestPoisonedFirstReadCachesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tw, keys := sealedRun(t, runA)
	appendAll(t, reader(t, tw, keys), runB,
		world.EventInput{Data: &world.RunCreated{WorkflowName: "charge", Input: json.RawMessage(`{"cents":7}`)}},
		world.EventInput{Data: &world.RunStarted{}})
	a, err := tw.World.GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	for _, poison := range []struct {
		name string
		ev   func(*world.Event)
		run  func(*world.Run)
	}{
		{"run_created event", func(e *world.Event) {
			if d, ok := e.Data.(*world.RunCreated); ok && e.RunID == runB {
				c := *d
				c.Input = a.Input
				e.Data = &c
			}
		}, nil},
		{"run record", nil, func(r *world.Run) {
			if r.RunID == runB {
				r.Input = a.Input
			}
		}},
	} {
		t.Run(poison.name, func(t *testing.T) {
			p := reader(t, tw, keys)
			tw.set(poison.run, nil, poison.ev)
			_, err := p.ListEvents(ctx, &world.ListEventsParams{RunID: runB})
			if poison.run != nil {
				_, err = p.GetRun(ctx, &world.GetRunParams{RunID: runB})
			}
			wantTampered(t, "poisoned first read", err)
			tw.set(nil, nil, nil)
			step := "step_01JABCDEFGHJKMNPQRSTVWXYZ" + map[bool]string{true: "C", false: "D"}[poison.run == nil]
			appendAll(t, p, runB, world.EventInput{CorrelationID: step, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`"after"`)}})

			clean := reader(t, tw, keys)
			st, err := clean.GetStep(ctx, &world.GetStepParams{RunID: runB, StepID: step})
			if err != nil || string(st.Input) != `"after"` {
				t.Fatalf("a clean process reads the step written after the poisoned read: %s, %v", st.Input, err)
			}
			if _, err := clean.ListEvents(ctx, &world.ListEventsParams{RunID: runB}); err != nil {
				t.Fatalf("a clean process reads run B: %v", err)
			}
		})
	}
}
