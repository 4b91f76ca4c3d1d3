package world

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RunState is a run as it stands after some event of its log: the run,
// every step, the active hooks and the waits (a finished run has none).
// Steps, hooks and waits are in ID order (creation order for IDs from one
// IDSource, as the engine's are).
type RunState struct {
	Run   Run    `json:"run"`
	Steps []Step `json:"steps"`
	Hooks []Hook `json:"hooks"`
	Waits []Wait `json:"waits"`
}

// FoldEvents rebuilds a run's state from its log: events must be the run's
// first events, in order, from run_created. Each is applied again with
// Apply at the time it was recorded, so the state is the one the World
// committed as of the last event, with one exception: a step lease
// renewed without an event (RenewStepLease) shows the lease the last
// step_started granted. An event that does not apply again as it was
// recorded is an ErrInvalid error.
func FoldEvents(events []Event) (*RunState, error) {
	f := folder{steps: map[string]*Step{}, hooks: map[string]*Hook{}, waits: map[string]*Wait{}}
	for _, ev := range events {
		if err := f.fold(ev); err != nil {
			return nil, err
		}
	}
	if f.run == nil {
		return nil, fmt.Errorf("%w: fold: no run_created", ErrInvalid)
	}
	return &RunState{
		Run:   *f.run,
		Steps: sortedValues(f.steps, func(s *Step) string { return s.StepID }),
		Hooks: sortedValues(f.hooks, func(h *Hook) string { return h.HookID }),
		Waits: sortedValues(f.waits, func(w *Wait) string { return w.WaitID }),
	}, nil
}

type folder struct {
	run   *Run
	steps map[string]*Step
	hooks map[string]*Hook
	waits map[string]*Wait
}

func (f *folder) fold(ev Event) error {
	st := State{Run: f.run}
	corr, data := ev.CorrelationID, ev.Data
	switch d := ev.Data.(type) {
	case *WaitCreated, *WaitCompleted:
		st.Wait = f.waits[corr]
	case *HookCreated, *HookReceived, *HookDisposed:
		st.Hook = f.hooks[corr]
	case *HookConflict:
		// Recorded for a hook_created whose token another run's hook held.
		data = &HookCreated{Token: d.Token}
		st.TokenHolder = &Hook{RunID: d.ConflictingRunID, Token: d.Token}
	default:
		if IsStepEvent(ev.Type()) {
			st.Step = f.steps[corr]
		}
	}
	eff, err := Apply(st, Event{RunID: ev.RunID, EventID: ev.EventID, CorrelationID: corr, Data: data}, ev.CreatedAt)
	switch {
	case err != nil:
		return fmt.Errorf("%w: fold: event %d (%s) does not apply again: %v", ErrInvalid, ev.Seq, ev.Type(), err)
	case eff.Skip || eff.Event.Seq != ev.Seq || eff.Event.Type() != ev.Type():
		return fmt.Errorf("%w: fold: event %d (%s) applies differently", ErrInvalid, ev.Seq, ev.Type())
	}
	f.run = eff.Run
	if eff.Step != nil {
		f.steps[corr] = eff.Step
	}
	if eff.Wait != nil {
		f.waits[corr] = eff.Wait
	}
	if eff.Hook != nil {
		f.hooks[corr] = eff.Hook
	}
	if eff.DeleteHookID != "" {
		delete(f.hooks, eff.DeleteHookID)
	}
	if eff.EndsRun {
		clear(f.hooks)
		clear(f.waits)
	}
	return nil
}

func sortedValues[T any](m map[string]*T, id func(*T) string) []T {
	vals := slices.SortedFunc(maps.Values(m), func(a, b *T) int { return strings.Compare(id(a), id(b)) })
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = *v
	}
	return out
}
