package encrypt

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/skeinflow/skein/world"
)

// sealEvents returns copies of events with their payloads sealed by k (the
// run's data key; a new one for a run_created). k nil: in clear.
func sealEvents(runID string, k *runKey, events []world.EventInput) ([]world.EventInput, error) {
	if k == nil {
		return events, nil
	}
	out := make([]world.EventInput, len(events))
	for i, ev := range events {
		out[i] = ev
		purpose, p, ok := payloadOf(ev.Data)
		if !ok {
			continue
		}
		sealed, err := k.sealPayload(runID, purpose, p, withKey(purpose))
		if err != nil {
			return nil, err
		}
		out[i].Data = withPayload(ev.Data, sealed)
		if d, ok := ev.Data.(*world.StepCreated); ok && d.InputDigest != "" {
			out[i].Data.(*world.StepCreated).InputDigest = k.digest(d.Input, len(d.InputDigest))
		}
	}
	return out, nil
}

// raw opens a payload into a json.RawMessage; an empty plaintext is none.
func (w *World) raw(ctx context.Context, runID, purpose string, b json.RawMessage) (json.RawMessage, error) {
	p, err := w.open(ctx, runID, purpose, b)
	if err != nil || len(p) == 0 {
		return nil, err
	}
	return p, nil
}

// openEvent returns ev with its payload opened (a copy when it was
// sealed).
func (w *World) openEvent(ctx context.Context, ev *world.Event) (*world.Event, error) {
	if ev == nil {
		return nil, nil
	}
	purpose, p, ok := payloadOf(ev.Data)
	if !ok || parseEnvelope(p) == nil {
		return ev, nil
	}
	opened, err := w.raw(ctx, ev.RunID, purpose, p)
	if err != nil {
		return nil, err
	}
	out := *ev
	out.Data = withPayload(ev.Data, opened)
	if d, ok := out.Data.(*world.StepCreated); ok && d.InputDigest != "" {
		if d.InputDigest, err = w.plainDigest(ctx, ev.RunID, d.Input, d.InputDigest); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// plainDigest turns the keyed digest a sealed step_created records back
// into the plain one the engine compares (world.DigestInput), once it has
// checked that the keyed one is the input's.
func (w *World) plainDigest(ctx context.Context, runID string, input []byte, keyed string) (string, error) {
	k, err := w.runKey(ctx, runID)
	if err != nil && w.leaveSealed && errors.Is(err, ErrKey) {
		var ke *KeyError
		if errors.As(err, &ke) {
			w.noteSealed(ke.KeyID, err)
		}
		return keyed, nil // the input stays sealed too
	}
	if err != nil || k == nil || k.digest(input, len(keyed)) != keyed {
		return keyed, err // not ours: leave it, replay will compare it as it is
	}
	plain := world.DigestInput(input)
	return plain[:min(len(keyed), len(plain))], nil
}

func (w *World) openEvents(ctx context.Context, evs []world.Event) ([]world.Event, error) {
	var out []world.Event
	for i := range evs {
		ev, err := w.openEvent(ctx, &evs[i])
		if err != nil {
			return nil, err
		}
		if ev != &evs[i] && out == nil {
			out = make([]world.Event, len(evs))
			copy(out, evs)
		}
		if out != nil {
			out[i] = *ev
		}
	}
	if out == nil {
		return evs, nil
	}
	return out, nil
}

// openRun returns r with its input and output opened.
func (w *World) openRun(ctx context.Context, r *world.Run) (*world.Run, error) {
	if r == nil || (parseEnvelope(r.Input) == nil && parseEnvelope(r.Output) == nil) {
		return r, nil
	}
	c := *r
	var err error
	if c.Input, err = w.raw(ctx, r.RunID, purposeRunInput, r.Input); err != nil {
		return nil, err
	}
	if c.Output, err = w.raw(ctx, r.RunID, purposeRunOutput, r.Output); err != nil {
		return nil, err
	}
	return &c, nil
}

// openStep returns s with its input and output opened.
func (w *World) openStep(ctx context.Context, s *world.Step) (*world.Step, error) {
	if s == nil || (parseEnvelope(s.Input) == nil && parseEnvelope(s.Output) == nil) {
		return s, nil
	}
	c := *s
	var err error
	if c.Input, err = w.raw(ctx, s.RunID, purposeStepInput, s.Input); err != nil {
		return nil, err
	}
	if c.Output, err = w.raw(ctx, s.RunID, purposeStepOutput, s.Output); err != nil {
		return nil, err
	}
	return &c, nil
}
