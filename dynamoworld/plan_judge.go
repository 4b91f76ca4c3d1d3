package dynamoworld

import (
	"github.com/skeinflow/skein/world"
)

// Judging: the planner's first half applies the commit's events in order
// with world.Apply, each on the state the commit has left so far (the
// snapshot's entities, as the events before it changed them). It records
// which entities change and how (change), the hook changes in event order
// (hookAct), and whether the commit creates or ends the run.

// judge applies the input's events in order to its snapshot with
// world.Apply. It returns the plan, or a refusal, or needRead when an event
// names an entity the snapshot does not know and the event does not create.
func judge(input *planInput) (pl *plan, ref *refusal, needRead bool) {
	snap, tok, now := input.snap, input.tokens, input.now
	pl = &plan{
		runID: input.runID, snap: snap, prevRun: snap.run, run: snap.run, now: now,
		results: make([]world.EventResult, len(input.events)),
		steps:   map[string]*change[world.Step]{}, waits: map[string]*change[world.Wait]{},
		hooks: map[string]*change[world.Hook]{}, tokens: map[string]*world.Hook{},
	}
	for i, in := range input.events {
		ev := world.Event{RunID: pl.runID, EventID: input.eventIDs[i], CorrelationID: in.CorrelationID, Data: in.Data}
		st := world.State{Run: pl.run, Limits: input.opts.limits}
		terminal := pl.run != nil && pl.run.Status.Terminal()
		corr := in.CorrelationID
		ok := true
		switch in.Data.(type) {
		case *world.StepCreated:
			st.Step, ok = pl.step(corr, true)
		case *world.WaitCreated:
			st.Wait, ok = pl.wait(corr, true)
		case *world.WaitCompleted:
			if !terminal {
				st.Wait, ok = pl.wait(corr, false)
			}
		case *world.HookCreated:
			st.Hook, ok = pl.hookByID(corr)
			st.TokenHolder = pl.tokenHolder(in.Data.(*world.HookCreated).Token, tok)
		case *world.HookReceived, *world.HookDisposed, *world.HookConflict:
			if !terminal {
				st.Hook, ok = pl.hook(corr)
			}
		default:
			if in.Data != nil && world.IsStepEvent(in.Type()) {
				st.Step, ok = pl.step(corr, false)
			}
		}
		if !ok && world.ValidateEvent(ev) == nil && pl.run != nil {
			return nil, nil, true
		}
		if i == 0 && snap.blind {
			if _, create := in.Data.(*world.RunCreated); !create {
				return nil, nil, true
			}
		}
		eff, err := world.Apply(st, ev, now)
		if err != nil {
			return nil, &refusal{index: i, err: err}, false
		}
		if eff.Skip {
			continue
		}
		pl.record(i, in, st, eff)
	}
	return pl, nil, false
}

// record notes what event i did (eff, judged on st): the entities it
// changed, its hook change, its result.
func (pl *plan) record(i int, in world.EventInput, st world.State, eff world.Effect) {
	ev := eff.Event
	pl.events = append(pl.events, ev)
	pl.run = eff.Run
	corr := in.CorrelationID
	switch d := in.Data.(type) {
	case *world.RunCreated:
		pl.created = true
		pl.idemKey = d.IdempotencyKey
	case *world.StepStarted:
		if c := pl.steps[corr]; c.init != nil && c.final == c.init && c.init.Status == world.StepStatusRunning {
			c.leaseGuard, c.initLease = true, c.init.LeaseExpiresAt
		}
	case *world.CompStarted:
		if c := pl.steps[corr]; c.init != nil && c.final == c.init && c.init.Status == world.StepStatusCompensating && c.init.Compensation != nil {
			c.compGuard, c.initCompLease = true, c.init.Compensation.LeaseExpiresAt
		}
	case *world.HookCreated:
		c := pl.hooks[corr]
		if eff.Hook == nil {
			pl.hookActs = append(pl.hookActs, hookAct{kind: actConflict, id: corr, token: d.Token, holder: st.TokenHolder, assumed: c.assumed})
		} else {
			pl.hookActs = append(pl.hookActs, hookAct{kind: actCreate, hook: eff.Hook, assumed: c.assumed})
			pl.tokens[d.Token] = eff.Hook
		}
	case *world.HookDisposed:
		pl.hookActs = append(pl.hookActs, hookAct{kind: actDispose, hook: st.Hook})
		pl.tokens[st.Hook.Token] = nil
	}
	if eff.Step != nil {
		c := pl.steps[corr]
		c.final = eff.Step
		if c.init == nil {
			c.created = true
		}
	}
	if eff.Wait != nil {
		c := pl.waits[corr]
		c.final = eff.Wait
		if c.init == nil {
			c.created = true
		}
	}
	if eff.Hook != nil {
		c := pl.hooks[corr]
		c.final = eff.Hook
		c.created, c.made = true, eff.Hook
	}
	if eff.DeleteHookID != "" {
		pl.hooks[eff.DeleteHookID].final = nil
	}
	if eff.EndsRun {
		pl.endRun()
	}
	res := world.EventResult{Event: &ev, Step: eff.Step, Hook: eff.Hook, Wait: eff.Wait}
	if _, received := in.Data.(*world.HookReceived); received {
		res.Hook = st.Hook // the hook as the event left it: unchanged
	}
	pl.results[i] = res
}

// endRun records a run's end: it disposes of every active hook and
// deletes every wait the snapshot knows (the planner adds those a query
// found, when the snapshot does not know them all).
func (pl *plan) endRun() {
	pl.endsRun = true
	for id, h := range pl.snap.hooks {
		if _, ok := pl.hooks[id]; !ok && h != nil {
			pl.hooks[id] = &change[world.Hook]{init: h, final: h}
		}
	}
	for _, id := range sortedIDs(pl.hooks) {
		if c := pl.hooks[id]; c.final != nil {
			pl.hookActs = append(pl.hookActs, hookAct{kind: actDispose, hook: c.final})
			pl.tokens[c.final.Token] = nil
			c.final = nil
		}
	}
	for id, wt := range pl.snap.waits {
		if _, ok := pl.waits[id]; !ok && wt != nil {
			pl.waits[id] = &change[world.Wait]{init: wt, final: wt}
		}
	}
	for _, c := range pl.waits {
		c.final = nil
	}
}

// tokenHolder is the active hook holding token as far as the commit knows:
// its own changes first, then the run's known hooks, then what earlier
// attempts learned; nil means free (the token item's condition checks it).
func (pl *plan) tokenHolder(token string, tok *tokenInfo) *world.Hook {
	if h, ok := pl.tokens[token]; ok {
		return h
	}
	for _, h := range pl.snap.hooks {
		if h != nil && h.Token == token {
			if c, touched := pl.hooks[h.HookID]; !touched || c.final != nil {
				return h
			}
		}
	}
	if tok != nil {
		return tok.holders[token]
	}
	return nil
}

// step returns the step's state in the commit so far. An unknown step is
// assumed absent when create is set; otherwise ok is false.
func (pl *plan) step(id string, create bool) (*world.Step, bool) {
	if c, ok := pl.steps[id]; ok {
		return c.final, true
	}
	if s, ok := pl.snap.steps[id]; ok {
		pl.steps[id] = &change[world.Step]{init: s, final: s}
		return s, true
	}
	if _, lazy := pl.snap.lazy[id]; lazy {
		return nil, false // its state is in a commit: read it
	}
	if !create {
		return nil, false
	}
	// Absent: proven by the snapshot's list of every step ID, or assumed
	// (the item's absence is then a condition) while the run has no bare
	// step, whose absent item proves nothing (bare.go). A listed ID is a
	// step the snapshot forgot (trim): read it.
	switch {
	case pl.snap.stepIDs != nil && pl.snap.stepIDs.has(id):
		return nil, false
	case pl.snap.stepIDs == nil && pl.snap.mayBare:
		return nil, false
	}
	pl.steps[id] = &change[world.Step]{assumed: pl.snap.stepIDs == nil}
	return nil, true
}

func (pl *plan) wait(id string, create bool) (*world.Wait, bool) {
	if c, ok := pl.waits[id]; ok {
		return c.final, true
	}
	if s, ok := pl.snap.waits[id]; ok {
		pl.waits[id] = &change[world.Wait]{init: s, final: s}
		return s, true
	}
	if !create {
		return nil, false
	}
	pl.waits[id] = &change[world.Wait]{assumed: true}
	return nil, true
}

// hookByID is the hook a hook_created names: any run's hook with that ID.
func (pl *plan) hookByID(id string) (*world.Hook, bool) {
	if c, ok := pl.hooks[id]; ok {
		return c.final, true
	}
	if h, ok := pl.snap.hooks[id]; ok && h != nil {
		pl.hooks[id] = &change[world.Hook]{init: h, final: h}
		return h, true
	}
	if h, ok := pl.snap.global[id]; ok {
		if h != nil && h.RunID != pl.runID {
			return h, true // another run's: the state machine refuses
		}
		pl.hooks[id] = &change[world.Hook]{init: h, final: h}
		return h, true
	}
	pl.hooks[id] = &change[world.Hook]{assumed: true}
	return nil, true
}

// hook is the run's active hook a hook event names.
func (pl *plan) hook(id string) (*world.Hook, bool) {
	if c, ok := pl.hooks[id]; ok {
		return c.final, true
	}
	if h, ok := pl.snap.hooks[id]; ok {
		pl.hooks[id] = &change[world.Hook]{init: h, final: h}
		return h, true
	}
	return nil, false
}
