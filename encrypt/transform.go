package encrypt

import (
	"context"
	"encoding/json"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sealmark"
	"github.com/skeinflow/skein/world"
)

// sealEvents returns copies of events with their payloads sealed by k (the
// run's data key; a new one for a run_created, whose execution context
// then records that the run is sealed). k nil: in clear.
func sealEvents(runID string, k *runKey, events []world.EventInput) ([]world.EventInput, error) {
	if k == nil {
		return events, nil
	}
	out := make([]world.EventInput, len(events))
	for i, ev := range events {
		out[i] = ev
		at, p, ok := payloadOf(ev.CorrelationID, ev.Data)
		if !ok {
			continue
		}
		sealed, err := k.sealPayload(runID, at, p, withKey(at))
		if err != nil {
			return nil, err
		}
		out[i].Data = withPayload(ev.Data, sealed)
		switch d := out[i].Data.(type) {
		case *world.StepCreated:
			if d.InputDigest != "" {
				d.InputDigest = k.digest(p, len(d.InputDigest))
			}
		case *world.RunCreated:
			d.ExecutionContext = sealmark.Mark(d.ExecutionContext)
		}
	}
	return out, nil
}

// raw opens a payload into a json.RawMessage; an empty plaintext is none.
func (w *sealedWorld) raw(runID string, k *runKey, at place, b json.RawMessage, required bool) (json.RawMessage, error) {
	p, err := w.open(runID, k, at, b, required)
	if err != nil || len(p) == 0 {
		return nil, err
	}
	return p, nil
}

// eventKey is the data key of ev's run: from ev itself when it is the
// run's run_created (its key record), else the run's.
func (w *sealedWorld) eventKey(ctx context.Context, ev *world.Event) (*runKey, error) {
	if d, ok := ev.Data.(*world.RunCreated); ok {
		return w.keyOf(ctx, ev.RunID, d.Input, d.ExecutionContext)
	}
	return w.runKey(ctx, ev.RunID)
}

// openEvent returns ev with its payload opened (a copy when it was
// sealed). Every payload event of a sealed run carries a sealed payload.
func (w *sealedWorld) openEvent(ctx context.Context, ev *world.Event) (*world.Event, error) {
	if ev == nil {
		return nil, nil
	}
	if _, _, ok := payloadOf(ev.CorrelationID, ev.Data); !ok {
		return ev, nil
	}
	k, err := w.eventKey(ctx, ev)
	if err != nil {
		if w.leave(err) {
			return ev, nil
		}
		return nil, err
	}
	return w.openEventWith(ev, k)
}

// openEventWith is openEvent with the run's key k known.
func (w *sealedWorld) openEventWith(ev *world.Event, k *runKey) (*world.Event, error) {
	at, p, ok := payloadOf(ev.CorrelationID, ev.Data)
	if !ok || k == nil {
		return ev, nil
	}
	opened, err := w.raw(ev.RunID, k, at, p, true)
	if err != nil {
		return nil, err
	}
	out := *ev
	out.Data = withPayload(ev.Data, opened)
	switch d := out.Data.(type) {
	case *world.StepCreated:
		if d.InputDigest != "" {
			d.InputDigest = plainDigest(k, d.Input, d.InputDigest)
		}
	case *world.RunCreated:
		d.ExecutionContext, _ = sealmark.Unmark(d.ExecutionContext)
	}
	return &out, nil
}

// plainDigest turns the keyed digest a sealed step_created records back
// into the plain one the engine compares (runrules.DigestInput), once it has
// checked that the keyed one is the input's; one that is not is left as
// it is, for replay to compare as it is.
func plainDigest(k *runKey, input []byte, keyed string) string {
	if k.digest(input, len(keyed)) != keyed {
		return keyed
	}
	plain := runrules.DigestInput(input)
	return plain[:min(len(keyed), len(plain))]
}

func (w *sealedWorld) openEvents(ctx context.Context, evs []world.Event) ([]world.Event, error) {
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

// openRun returns r with its input and output opened, and without the
// marker its execution context carries (the run's key record is r's own).
func (w *sealedWorld) openRun(ctx context.Context, r *world.Run) (*world.Run, error) {
	if r == nil {
		return nil, nil
	}
	k, err := w.keyOf(ctx, r.RunID, r.Input, r.ExecutionContext)
	if err != nil {
		if w.leave(err) {
			return r, nil
		}
		return nil, err
	}
	return w.openRunWith(r, k)
}

// openRunWith is openRun with the run's key k known.
func (w *sealedWorld) openRunWith(r *world.Run, k *runKey) (*world.Run, error) {
	if k == nil {
		return r, nil
	}
	c := *r
	var err error
	if c.Input, err = w.raw(r.RunID, k, place{field: fieldRunInput}, r.Input, true); err != nil {
		return nil, err
	}
	if c.Output, err = w.raw(r.RunID, k, place{field: fieldRunOutput}, r.Output, r.Status == world.RunStatusCompleted); err != nil {
		return nil, err
	}
	c.ExecutionContext, _ = sealmark.Unmark(r.ExecutionContext)
	return &c, nil
}

// openStep returns s with its input and output opened.
func (w *sealedWorld) openStep(ctx context.Context, s *world.Step) (*world.Step, error) {
	if s == nil {
		return nil, nil
	}
	k, err := w.runKey(ctx, s.RunID)
	if err != nil {
		if w.leave(err) {
			return s, nil
		}
		return nil, err
	}
	return w.openStepWith(s, k)
}

// openStepWith is openStep with the run's key k known.
func (w *sealedWorld) openStepWith(s *world.Step, k *runKey) (*world.Step, error) {
	if k == nil {
		return s, nil
	}
	c := *s
	var err error
	if c.Input, err = w.raw(s.RunID, k, place{field: fieldStepInput, entity: s.StepID}, s.Input, true); err != nil {
		return nil, err
	}
	if c.Output, err = w.raw(s.RunID, k, place{field: fieldStepOutput, entity: s.StepID}, s.Output, s.Status == world.StepStatusCompleted); err != nil {
		return nil, err
	}
	return &c, nil
}
