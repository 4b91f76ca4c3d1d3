package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// committer decides what one commit of a session holds and whether it
// fits: it gathers the deliveries not yet committed (pending, and the
// outcomes behind them, held), builds the plan the workflow's suspension
// needs, appends it fenced on the run's last event (runState.lastSeq) and
// takes what committed into the run. It holds the parts below it and the
// session's run state; what it needs of the session's replay and inline
// steps it asks through run and steps, the narrow views the session passes
// down (it holds no pointer to the session).
type committer struct {
	e     *parts
	runID string
	st    *runState // the session's loaded state (load.go): log, lastSeq, status, hold
	run   commitRun
	steps commitSteps

	// retryAttempt is the hold attempt the message retries
	// (world.Message.HoldAttempt; see holdRun).
	retryAttempt int

	// Uncommitted deliveries (in delivery order) and the step outcomes
	// behind them, delivered again after a rebuild.
	pending []world.EventInput
	held    []outcome
	// heldSince is the replay's slice count (replayer.slices) when the
	// first held outcome was delivered, and split says that a commit of
	// them went in only in part (commitPlan): what absorb asks.
	heldSince int64
	split     bool
}

// commitRun is what a commit asks of the run's replay and its end: the
// session's current replayer (a rebuild replaces it), what the run's end
// records, and the session's end after a commit that ends it.
type commitRun interface {
	replay() *replayer
	compensatesOnFailure() bool
	hasCleanup() bool
	restful() bool
	stopInflight(keep bool) []outcome
	recordLate(ctx context.Context, outs ...outcome)
	rest(ctx context.Context, cancel, deactivated bool) error
}

// commitSteps is what a commit asks of the steps the session runs: how
// many more may start inline, which are due, and starting or queueing those
// it committed.
type commitSteps interface {
	capacity() int
	schedule(now time.Time) schedule
	launch(ctx context.Context, o *op, st *world.Step)
	launchComp(ctx context.Context, o *op)
	queue(ctx context.Context, ops []*op) error
}

// plan is one commit: the events, and what to do with each once committed.
type plan struct {
	events   []world.EventInput
	meta     []eventMeta
	queue    []*op // new steps beyond inline capacity: enqueued after commit
	terminal bool
	// deactivated: the terminal event commits with run_deactivated, the
	// run having nothing left to run (restful).
	deactivated bool
}

type eventMeta struct {
	echo   bool // already applied to the workflow (a delivered result)
	launch *op  // a step_started to run inline once committed
	comp   *op  // a comp_started, whose compensation runs inline once committed
	hook   *op  // a hook_disposed
}

func (p *plan) add(corr string, d world.EventData, m eventMeta) {
	p.events = append(p.events, world.EventInput{CorrelationID: corr, Data: d})
	p.meta = append(p.meta, m)
}

func (p *plan) remove(i int) {
	p.events = append(p.events[:i], p.events[i+1:]...)
	p.meta = append(p.meta[:i], p.meta[i+1:]...)
}

// build gathers what the workflow's suspension needs: the delivered results,
// then either the terminal event or the creation of the operations the code
// asked for (with step_started for the steps that fit the inline capacity)
// and hook disposals, in the order the code asked for them (a hook disposed
// and then asked for again on its token must find the token free), and
// restarts of existing steps that are due.
func (c *committer) build(now time.Time) *plan {
	p := &plan{}
	r := c.run.replay()
	// A pending run starts; a held one replayed without diverging (the
	// loop holds it again otherwise) goes on.
	if (c.st.runStatus == world.RunStatusPending || c.st.runStatus == world.RunStatusHeld) && r.terminal == "" {
		p.add("", &world.RunStarted{}, eventMeta{})
	}
	for _, ev := range c.pending {
		p.add(ev.CorrelationID, ev.Data, eventMeta{echo: true})
	}
	if r.terminal != "" {
		return &plan{} // the run ended meanwhile: endForeign records what it can
	}
	if r.finished {
		for _, o := range r.finalAttributes() {
			p.add(o.id, attributeEvent(o), eventMeta{})
		}
		if r.failure != nil {
			p.add("", &world.RunFailed{Error: r.failure, ErrorCode: r.failCode, Compensate: c.run.compensatesOnFailure()}, eventMeta{})
		} else {
			p.add("", &world.RunCompleted{Output: r.output, Cleanup: c.run.hasCleanup()}, eventMeta{})
		}
		p.terminal = true
		if c.run.restful() {
			p.add("", &world.RunDeactivated{}, eventMeta{})
			p.deactivated = true
		}
		return p
	}
	capacity := c.steps.capacity()
	lease := c.e.cfg.StepLeaseTTL
	disposals := r.takeDisposals()
	for _, o := range r.ops[r.matched:] {
		// A disposal the code asked for before this operation is committed
		// before it: the operation may be a hook on the disposed token.
		for len(disposals) > 0 && disposals[0].disposeAt <= o.index {
			p.add(disposals[0].id, &world.HookDisposed{}, eventMeta{hook: disposals[0]})
			disposals = disposals[1:]
		}
		switch o.kind {
		case opStep:
			p.add(o.id, &world.StepCreated{StepName: o.name, Input: o.input, InputDigest: o.inputDigest(), Patches: o.patches,
				Compensation: o.compDeclared}, eventMeta{})
			if capacity > 0 {
				p.add(o.id, &world.StepStarted{StepName: o.name, LeaseTTL: lease}, eventMeta{launch: o})
				capacity--
			} else {
				p.queue = append(p.queue, o)
			}
		case opHook:
			p.add(o.id, &world.HookCreated{Token: o.name, Metadata: o.metadata, IsWebhook: o.isWebhook, Patches: o.patches}, eventMeta{})
		case opWait:
			at := o.resumeAt
			if at.IsZero() {
				at = now.Add(o.duration)
			}
			p.add(o.id, &world.WaitCreated{ResumeAt: at, Patches: o.patches}, eventMeta{})
		case opAttr:
			p.add(o.id, attributeEvent(o), eventMeta{})
		}
	}
	for _, o := range disposals {
		p.add(o.id, &world.HookDisposed{}, eventMeta{hook: o})
	}
	for _, o := range c.steps.schedule(now).runnableComps() {
		if capacity == 0 {
			break
		}
		p.add(o.id, &world.CompStarted{StepName: o.name, LeaseTTL: lease}, eventMeta{comp: o})
		capacity--
	}
	if capacity > 0 {
		for _, o := range c.steps.schedule(now).firstRunnable(capacity) {
			if capacity == 0 {
				break
			}
			p.add(o.id, &world.StepStarted{StepName: o.name, LeaseTTL: lease}, eventMeta{launch: o})
			capacity--
		}
	}
	return p
}

// takeDisposals drops the disposals that are done (or have nothing to
// dispose) and returns those still to commit, in the order the code asked
// for them.
func (r *replayer) takeDisposals() []*op {
	keep := r.disposals[:0]
	for _, o := range r.disposals {
		if o.disposeLogged || o.disposeSent || o.conflictRunID != "" {
			continue
		}
		keep = append(keep, o)
	}
	r.disposals = keep
	return keep
}

// commit appends the plan, fenced on the last event this session knows. A
// refused step_started (the step is leased by another executor or not yet
// due) or hook_disposed (the hook is gone) is dropped and the rest retried;
// any other refusal means the run changed underneath: a *staleError.
func (c *committer) commit(ctx context.Context, p *plan) (*world.AppendResult, error) {
	for {
		res, err := c.e.append(ctx, &world.AppendParams{RunID: c.runID, Events: p.events, IfLastSeq: c.st.lastSeq})
		if err == nil {
			return res, nil
		}
		if re := refusedEvent(err); re != nil && re.Index >= 0 && re.Index < len(p.events) && c.droppable(p, re) {
			p.remove(re.Index)
			if len(p.events) == 0 {
				return nil, nil
			}
			continue
		}
		if errors.Is(err, world.ErrConflict) || errors.Is(err, world.ErrGone) || errors.Is(err, world.ErrNotFound) {
			return nil, &staleError{err: err}
		}
		return nil, fmt.Errorf("engine: commit to run %s: %w", c.runID, err)
	}
}

func (c *committer) droppable(p *plan, re *world.RefusalError) bool {
	in := p.events[re.Index]
	m := p.meta[re.Index]
	c.run.replay().tainted = true // what the World refused is not in the log
	switch in.Data.(type) {
	case *world.StepStarted:
		o := m.launch
		if o == nil || !o.created {
			return false
		}
		switch {
		case tooEarly(re):
			o.status, o.retryAfter = world.StepStatusPending, re.Until
			c.run.replay().stepOrder.timer(o)
			return true
		case stepLeased(re):
			o.status, o.attempt, o.leaseUntil = world.StepStatusRunning, re.Attempt, re.Until
			c.run.replay().stepOrder.timer(o)
			return true
		}
	case *world.CompStarted:
		return m.comp != nil && m.comp.comp != nil && refusedComp(m.comp.comp, re)
	case *world.HookDisposed:
		if m.hook != nil && re.Kind == world.ErrNotFound {
			m.hook.disposeSent = true
			return true
		}
	}
	return false
}

// commitPlan commits p and takes it into the session (apply): in one
// Append, or, when the World takes less in one (world.AppendFits: a wide
// fan-out on dynamoworld), in several fenced Appends in order, each applied
// as it commits. Splitting is safe because replay matches creation events
// in log order whatever commits they came in: should a later part be
// refused (a *staleError), the session reloads the log, its own earlier
// parts included, and rebuilds. It reports whether the whole plan
// committed with at least one event.
func (c *committer) commitPlan(ctx context.Context, p *plan) (bool, error) {
	committed := false
	for rest := p; len(rest.events) > 0; {
		part := rest
		if n := world.AppendFits(c.e.w, rest.events); n < len(rest.events) {
			part = &plan{events: rest.events[:n:n], meta: rest.meta[:n:n]}
			rest = &plan{events: rest.events[n:], meta: rest.meta[n:]}
		} else {
			rest = &plan{}
		}
		res, err := c.commit(ctx, part)
		if err != nil {
			c.split = c.split || committed
			return false, err
		}
		if res != nil {
			c.applyEvents(ctx, part, res)
			committed = true
		}
	}
	if !committed {
		return false, nil
	}
	return true, c.apply(ctx, p)
}

// applyEvents takes committed events into the session: they join the log,
// those not yet applied are consumed by the workflow, steps start inline.
func (c *committer) applyEvents(ctx context.Context, p *plan, res *world.AppendResult) {
	for i := range p.events {
		r := res.Results[i]
		if r.Event == nil {
			continue
		}
		ev := c.st.log.add(*r.Event)
		c.st.lastSeq = ev.Seq
		c.st.track(ev)
		c.logPanic(ev)
		m := p.meta[i]
		if r := c.run.replay(); m.echo {
			r.lastSeq = ev.Seq
		} else {
			r.consume(ev)
		}
		if m.hook != nil {
			m.hook.disposeSent = true
		}
		if m.launch != nil && r.Step != nil {
			c.steps.launch(ctx, m.launch, r.Step)
		}
		if m.comp != nil && r.Step != nil {
			c.steps.launchComp(ctx, m.comp)
		}
	}
	if res.Run != nil && res.Run.LastSeq > c.st.lastSeq {
		c.st.lastSeq = res.Run.LastSeq
	}
	c.e.known.note(c.runID, res) // for the groups of its queued steps (knownsteps.go)
}

// apply ends a committed plan: the deliveries are no longer pending, and
// excess steps are enqueued.
func (c *committer) apply(ctx context.Context, p *plan) error {
	c.pending, c.held, c.split = nil, nil, false
	return c.steps.queue(ctx, p.queue)
}

// tooEarly reports whether re refuses a step (or compensation) attempt
// before its retry time (re.Until).
func tooEarly(re *world.RefusalError) bool {
	return re != nil && re.Kind == world.ErrTooEarly && !re.Until.IsZero()
}

// stepLeased reports whether re refuses a step (or compensation) attempt
// while re.Attempt runs under a lease until re.Until.
func stepLeased(re *world.RefusalError) bool {
	return re != nil && re.Kind == world.ErrConflict && re.Attempt > 0
}

// refusalOf returns the *world.RefusalError err carries, nil when none.
func refusalOf(err error) *world.RefusalError {
	var re *world.RefusalError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// refusedEvent returns the refusal of one event of an Append that err
// carries (re.Index names the event), nil when none: a refusal of no event
// (an expired read on the way, say) is not one.
func refusedEvent(err error) *world.RefusalError {
	if re := refusalOf(err); re != nil && re.EventType != "" {
		return re
	}
	return nil
}
