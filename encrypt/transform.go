package encrypt

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/skeinflow/skein/world"
)

// digestSize is the length of a StepCreated.InputDigest in hex digits.
func digestSize(d string) int { return len(d) }

// sealEvents returns copies of events with their payloads sealed by k (the
// run's data key; a new one for a run_created). k nil: in clear.
func sealEvents(runID string, k *runKey, events []world.EventInput) ([]world.EventInput, error) {
	if k == nil {
		return events, nil
	}
	out := make([]world.EventInput, len(events))
	for i, ev := range events {
		out[i] = ev
		var err error
		switch d := ev.Data.(type) {
		case *world.RunCreated:
			c := *d
			c.Input, err = k.sealPayload(runID, purposeRunInput, d.Input, true)
			out[i].Data = &c
		case *world.RunCompleted:
			c := *d
			c.Output, err = k.sealPayload(runID, purposeRunOutput, d.Output, false)
			out[i].Data = &c
		case *world.StepCreated:
			c := *d
			c.Input, err = k.sealPayload(runID, purposeStepInput, d.Input, false)
			if d.InputDigest != "" {
				c.InputDigest = k.digest(d.Input, digestSize(d.InputDigest))
			}
			out[i].Data = &c
		case *world.StepCompleted:
			c := *d
			c.Result, err = k.sealPayload(runID, purposeStepOutput, d.Result, false)
			out[i].Data = &c
		case *world.HookReceived:
			c := *d
			c.Payload, err = k.sealPayload(runID, purposeHook, d.Payload, false)
			out[i].Data = &c
		}
		if err != nil {
			return nil, err
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

// openEvent returns ev with its payloads opened (a copy when any was
// sealed).
func (w *World) openEvent(ctx context.Context, ev *world.Event) (*world.Event, error) {
	if ev == nil {
		return nil, nil
	}
	out := *ev
	var err error
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		if parseEnvelope(d.Input) == nil {
			return ev, nil
		}
		c := *d
		c.Input, err = w.raw(ctx, ev.RunID, purposeRunInput, d.Input)
		out.Data = &c
	case *world.RunCompleted:
		if parseEnvelope(d.Output) == nil {
			return ev, nil
		}
		c := *d
		c.Output, err = w.raw(ctx, ev.RunID, purposeRunOutput, d.Output)
		out.Data = &c
	case *world.StepCreated:
		if parseEnvelope(d.Input) == nil {
			return ev, nil
		}
		c := *d
		if c.Input, err = w.raw(ctx, ev.RunID, purposeStepInput, d.Input); err == nil && d.InputDigest != "" {
			c.InputDigest, err = w.plainDigest(ctx, ev.RunID, c.Input, d.InputDigest)
		}
		out.Data = &c
	case *world.StepCompleted:
		if parseEnvelope(d.Result) == nil {
			return ev, nil
		}
		c := *d
		c.Result, err = w.raw(ctx, ev.RunID, purposeStepOutput, d.Result)
		out.Data = &c
	case *world.HookReceived:
		if parseEnvelope(d.Payload) == nil {
			return ev, nil
		}
		c := *d
		c.Payload, err = w.raw(ctx, ev.RunID, purposeHook, d.Payload)
		out.Data = &c
	default:
		return ev, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// plainDigest turns the keyed digest a sealed step_created records back
// into the plain one the engine compares (world.DigestInput), once it has
// checked that the keyed one is the input's.
func (w *World) plainDigest(ctx context.Context, runID string, input []byte, keyed string) (string, error) {
	k, err := w.runKey(ctx, runID)
	if err != nil && w.leaveSealed && errors.Is(err, ErrKey) {
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
