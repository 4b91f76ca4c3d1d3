package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/skeinflow/skein/world"
)

// groupRead is what a group's read of its steps found: the steps to start
// (todo), those ended already (ended), and the key of the continuation the
// last step found ended or unregistered needs (wake, see executeStep).
type groupRead struct {
	todo, ended []*world.Step
	wake        string
}

// readGroup reads a group's run and steps and sorts the steps for
// executeGroup. A nil run (and error) means there is nothing to do: the
// run has ended. A step the read shows another executor running under a
// live lease, or waiting for its retry's time, is left out of the start
// and queued again for when it may start, or dropped, as its refused
// step_started would be (requeueUnstarted): refused, each would cost the
// group's start an Append of its own. A session that takes up queued
// steps whose messages have not arrived yet leaves a group many of those.
func (bg *background) readGroup(ctx context.Context, runID string, ids []string) (*world.Run, groupRead, error) {
	var g groupRead
	var steps []*world.Step
	var errs []error
	read := make(chan struct{})
	go func() { steps, errs = bg.getSteps(ctx, runID, ids, true); close(read) }()
	run, err := bg.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
	<-read
	if err != nil {
		return nil, g, err
	}
	if run.Status.Terminal() {
		return nil, g, nil
	}
	if err := sealedWithoutKey(runID, run.Input, run.ExecutionContext); err != nil {
		return nil, g, err // never run a step on an envelope
	}
	now := bg.now()
	var owned []*world.Step
	for i, st := range steps {
		switch {
		case errors.Is(errs[i], world.ErrNotFound):
			bg.log.Warn("engine: background step", "run", runID, "step", ids[i], "err", errs[i])
		case errs[i] != nil:
			return nil, g, errs[i]
		case st.Status.Terminal():
			g.wake = keyDone(st.StepID, st.Attempt) // see executeStep
			g.ended = append(g.ended, st)
		case !bg.registered(st.StepName):
			g.wake = keyUnregistered(st.StepID, st.Attempt) // see executeStep
		case startRefusal(st, now) != nil:
			owned = append(owned, st)
		default:
			g.todo = append(g.todo, st)
		}
	}
	return run, g, bg.requeueOwned(ctx, runID, owned, now)
}

// startRefusal is the refusal a step_started of st would meet at now, as
// world.Apply decides it, for the two it may lift: st waits for its
// retry's time, or runs under a live lease. Nil when neither.
func startRefusal(st *world.Step, now time.Time) *world.RefusalError {
	switch {
	case st.RetryAfter.After(now):
		return &world.RefusalError{Kind: world.ErrTooEarly, EventType: world.EventStepStarted, Entity: st.StepID, Until: st.RetryAfter}
	case st.Status == world.StepStatusRunning && st.LeaseExpiresAt.After(now):
		return &world.RefusalError{Kind: world.ErrConflict, EventType: world.EventStepStarted, Entity: st.StepID, Attempt: st.Attempt, Until: st.LeaseExpiresAt}
	}
	return nil
}

// requeueOwned does for each of steps what requeueUnstarted does for the
// refusal its step_started would meet at now, concurrently (each may read
// the step's events and send a message).
func (bg *background) requeueOwned(ctx context.Context, runID string, steps []*world.Step, now time.Time) error {
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() { _, errs[i] = bg.requeueUnstarted(ctx, runID, st.StepID, startRefusal(st, now)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// getSteps reads steps ids of run runID, concurrently: from the World, or,
// with known, as this process's Appends last left those it knows
// (knownsteps.go).
func (bg *background) getSteps(ctx context.Context, runID string, ids []string, known bool) ([]*world.Step, []error) {
	steps := make([]*world.Step, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		if known {
			if steps[i] = bg.known.get(runID, id); steps[i] != nil {
				continue
			}
		}
		wg.Go(func() { steps[i], errs[i] = bg.w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: id}) })
	}
	wg.Wait()
	return steps, errs
}

// rereadGroup reads again the steps of a group's start still to start
// (todo) and sorts them as readGroup does: it returns those that may still
// start as read now, and those that have ended (for startGroup's caller
// to wake the run as for steps found ended); those another executor runs
// or that wait for their retry are queued again or dropped
// (requeueOwned), and those gone are left out.
func (bg *background) rereadGroup(ctx context.Context, runID string, todo []*world.Step) (keep, ended []*world.Step, err error) {
	ids := make([]string, len(todo))
	for i, st := range todo {
		ids[i] = st.StepID
	}
	steps, errs := bg.getSteps(ctx, runID, ids, false)
	now := bg.now()
	var owned []*world.Step
	for i, st := range steps {
		switch {
		case errors.Is(errs[i], world.ErrNotFound):
		case errs[i] != nil:
			return nil, nil, errs[i]
		case st.Status.Terminal():
			ended = append(ended, st)
		case startRefusal(st, now) != nil:
			owned = append(owned, st)
		default:
			keep = append(keep, st)
		}
	}
	return keep, ended, bg.requeueOwned(ctx, runID, owned, now)
}
