package world_test

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/skeinflow/skein/world"
)

// propStore is the smallest World storage around world.Apply, for the
// property tests: it loads the State an event needs, applies the Effect,
// commits a batch all or nothing, and fences it with IfLastSeq as the
// Worlds do. Entities are stored by value, so a commit works on a copy.
type propStore struct {
	runs   map[string]world.Run
	steps  map[string]world.Step // run/step
	waits  map[string]world.Wait // run/wait
	hooks  map[string]world.Hook // hook ID -> active hook
	tokens map[string]string     // token -> hook ID
	idem   map[string]string     // idempotency key -> run
	events map[string][]world.Event
}

func newPropStore() *propStore {
	return &propStore{
		runs: map[string]world.Run{}, steps: map[string]world.Step{}, waits: map[string]world.Wait{},
		hooks: map[string]world.Hook{}, tokens: map[string]string{}, idem: map[string]string{},
		events: map[string][]world.Event{},
	}
}

func (s *propStore) clone() *propStore {
	c := &propStore{
		runs: maps.Clone(s.runs), steps: maps.Clone(s.steps), waits: maps.Clone(s.waits),
		hooks: maps.Clone(s.hooks), tokens: maps.Clone(s.tokens), idem: maps.Clone(s.idem),
		events: map[string][]world.Event{},
	}
	for k, v := range s.events {
		c.events[k] = append([]world.Event(nil), v...)
	}
	return c
}

func key(run, id string) string { return run + "/" + id }

// state loads what Apply needs to judge ev.
func (s *propStore) state(ev world.Event) world.State {
	var st world.State
	if r, ok := s.runs[ev.RunID]; ok {
		st.Run = &r
	}
	corr := ev.CorrelationID
	switch {
	case strings.HasPrefix(corr, world.PrefixStep):
		if v, ok := s.steps[key(ev.RunID, corr)]; ok {
			st.Step = &v
		}
	case strings.HasPrefix(corr, world.PrefixWait):
		if v, ok := s.waits[key(ev.RunID, corr)]; ok {
			st.Wait = &v
		}
	case strings.HasPrefix(corr, world.PrefixHook):
		if h, ok := s.hooks[corr]; ok && h.RunID == ev.RunID {
			st.Hook = &h
		}
	}
	switch d := ev.Data.(type) {
	case *world.HookCreated:
		if id, ok := s.tokens[d.Token]; ok {
			h := s.hooks[id]
			st.TokenHolder = &h
		}
	case *world.RunCreated:
		st.IdempotencyRunID = s.idem[d.IdempotencyKey]
	}
	return st
}

// effect stores what Apply decided.
func (s *propStore) effect(eff world.Effect) {
	if eff.Skip {
		return
	}
	run := eff.Run.RunID
	s.runs[run] = *eff.Run
	s.events[run] = append(s.events[run], eff.Event)
	if eff.Step != nil {
		s.steps[key(run, eff.Step.StepID)] = *eff.Step
	}
	if eff.Wait != nil {
		s.waits[key(run, eff.Wait.WaitID)] = *eff.Wait
	}
	if eff.Hook != nil {
		s.hooks[eff.Hook.HookID] = *eff.Hook
		s.tokens[eff.Hook.Token] = eff.Hook.HookID
	}
	if eff.DeleteHookID != "" {
		s.deleteHook(eff.DeleteHookID)
	}
	if d, ok := eff.Event.Data.(*world.RunCreated); ok && d.IdempotencyKey != "" {
		s.idem[d.IdempotencyKey] = run
	}
	if eff.EndsRun {
		for id, h := range s.hooks {
			if h.RunID == run {
				s.deleteHook(id)
			}
		}
		for k, w := range s.waits {
			if w.RunID == run {
				delete(s.waits, k)
			}
		}
	}
}

func (s *propStore) deleteHook(id string) {
	h, ok := s.hooks[id]
	if !ok {
		return
	}
	delete(s.hooks, id)
	if s.tokens[h.Token] == id {
		delete(s.tokens, h.Token)
	}
}

// append commits evs to run at now, all or nothing, fenced with ifLastSeq
// when positive. It returns the index of the refused event (-1 for the
// fence) with Apply's refusal.
func (s *propStore) append(run string, evs []world.EventInput, ifLastSeq int64, now time.Time) (int, error) {
	if ifLastSeq > 0 && s.runs[run].LastSeq != ifLastSeq {
		return -1, fmt.Errorf("%w: run %s is at %d, not %d", world.ErrConflict, run, s.runs[run].LastSeq, ifLastSeq)
	}
	tx := s.clone()
	for i, in := range evs {
		ev := world.Event{RunID: run, EventID: "evnt_01ARZ3NDEKTSV4RRFFQ69G5FAV", CorrelationID: in.CorrelationID, Data: in.Data}
		eff, err := world.Apply(tx.state(ev), ev, now)
		if err != nil {
			return i, err
		}
		tx.effect(eff)
	}
	*s = *tx
	return 0, nil
}
