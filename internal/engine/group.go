package engine

import (
	"context"
	"errors"
	"runtime"
	"slices"

	"github.com/skeinflow/skein/world"
)

// executeGroup executes the steps of a message that names several (a
// fan-out's excess, see session.enqueueSteps) as one invocation runs its
// inline steps: it starts them all in one Append, runs them concurrently,
// and records their outcomes in as few Appends as they allow (whatever has
// finished when the previous Append returns goes into the next), then
// takes the run on once (wakeAfterStep). Appends to one run are serialized
// by the World, so a step per Append would queue each behind the others.
//
// A step that cannot be found is reported and skipped; any other failure
// retries the whole message (its steps already finished are skipped then,
// and still wake the run). tag is the message's (msgTag).
func (bg *background) executeGroup(ctx context.Context, runID string, ids []string, tag string) error {
	run, g, err := bg.readGroup(ctx, runID, ids)
	if err != nil || run == nil {
		return err
	}
	todo, ended, wake := g.todo, g.ended, g.wake
	started, meanwhile, err := bg.startGroup(ctx, runID, todo)
	if err != nil {
		if errors.Is(err, world.ErrGone) {
			return nil // the run ended
		}
		return err
	}
	for _, st := range meanwhile { // as if found ended above (endedMeanwhile)
		wake = keyDone(st.StepID, st.Attempt)
		ended = append(ended, st)
	}
	meta := runMeta{runID: run.RunID, workflowName: run.WorkflowName, input: run.Input, execCtx: run.ExecutionContext, createdAt: run.CreatedAt}
	if len(started) > 0 {
		origin := bg.spans.runParent(run.RunID, run.ExecutionContext) // once for all the steps' spans
		for i := range started {
			started[i].run, started[i].origin = meta, origin
		}
	}
	ran, abandoned, err := bg.runGroup(ctx, runID, started, len(ids))
	if err != nil {
		return err
	}
	if ran != "" {
		wake = ran
	}
	if abandoned && ctx.Err() != nil {
		return ctx.Err() // cut off: the message comes back for the rest
	}
	if wake == "" {
		return nil
	}
	// Ran none of its steps: it found them ended (see delivery), by a
	// queue executor (see executeStep).
	late := len(started) == 0 && slices.ContainsFunc(ended, func(st *world.Step) bool {
		return bg.queuedAttempt(ctx, runID, st.StepID, st.Attempt)
	})
	return bg.wakeAfterStep(ctx, runID, wake, delivery{tag: tag, late: late})
}

// runGroup runs the started attempts of a group of n steps concurrently
// and records their outcomes in batches: whatever has finished when the
// previous Append returns goes into the next. A retrying step is queued
// again for its retry. It returns the key of the continuation the last
// recorded outcome needs (empty when none needs one) and whether an
// attempt was abandoned (cut off, nothing to record).
func (bg *background) runGroup(ctx context.Context, runID string, started []stepExec, n int) (wake string, abandoned bool, err error) {
	results := make(chan outcome, len(started))
	for _, x := range started {
		go func() { results <- bg.steps.runStep(ctx, x) }()
	}
	for left := len(started); left > 0; {
		var batch []outcome
		batch, left = bg.gather(results, append(batch, <-results), left-1)
		kept := batch[:0]
		for _, o := range batch {
			if o.kind == outAbandoned {
				abandoned = true
				continue
			}
			kept = append(kept, o)
		}
		ended, err := bg.recordGroup(ctx, runID, kept)
		if err != nil {
			return "", abandoned, err
		}
		if ended {
			bg.rest.deactivate(ctx, runID) // see executeStep
			continue
		}
		for _, o := range kept {
			if o.kind == outRetrying {
				m := world.Message{RunID: runID, StepID: o.stepID, NotBefore: o.retryAfter}
				if err := bg.enqueue(ctx, m, keyStep(o.stepID, o.attempt)); err != nil {
					return "", abandoned, err
				}
				continue
			}
			wake = keyDoneGroup(o.stepID, o.attempt, n)
		}
	}
	return wake, abandoned, nil
}

// appendNoted is port.append that keeps what it appended for the run's
// session in this process (recent.go), which then need not read it back.
func (bg *background) appendNoted(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := bg.append(ctx, p)
	if err == nil {
		bg.recent.note(p.RunID, res)
		bg.known.note(p.RunID, res)
	}
	return res, err
}

// gather adds to batch the outcomes of the left steps still running that
// finish while their siblings take their turn: after the first outcome it
// yields the processor (settle) for as long as each yield brings more.
// Without it the goroutine recording them, woken by the first outcome,
// runs before the siblings the first step's goroutine queued ahead of it
// and records that outcome alone, and the next, and so on: an Append per
// step. It waits for nothing but the runnable: a sibling still running
// (blocked, or slow) when a yield brings nothing is left for a later
// Append, and what has finished goes now.
func (bg *background) gather(results <-chan outcome, batch []outcome, left int) ([]outcome, int) {
	drain := func() (got bool) {
		for left > 0 {
			select {
			case o := <-results:
				batch = append(batch, o)
				left--
				got = true
			default:
				return got
			}
		}
		return got
	}
	drain()
	for left > 0 {
		if bg.settle != nil {
			bg.settle(results, left)
		} else {
			runtime.Gosched()
		}
		if !drain() {
			break
		}
	}
	return batch, left
}

// startGroup starts the steps' attempts (queued, see world.StepStarted) in
// as few Appends as the World takes. A step it may not start is left out:
// one that has ended since it was read, which it returns (ended), for the
// run to be woken as for one found ended (endedMeanwhile); one not yet due
// or running under a live lease is queued again for that time
// (requeueRefusedStart). After a step was refused as taken or ended by
// another executor, the steps left are read again (rereadGroup).
func (bg *background) startGroup(ctx context.Context, runID string, todo []*world.Step) (out []stepExec, ended []*world.Step, err error) {
	for len(todo) > 0 {
		evs := make([]world.EventInput, len(todo))
		for i, st := range todo {
			evs[i] = world.EventInput{CorrelationID: st.StepID, Data: &world.StepStarted{StepName: st.StepName, LeaseTTL: bg.cfg.StepLeaseTTL, Queued: true}}
		}
		n := world.AppendFits(bg.w, evs)
		res, err := bg.appendNoted(ctx, &world.AppendParams{RunID: runID, Events: evs[:n]})
		if re := refusedEvent(err); re != nil && re.Index >= 0 && re.Index < n {
			switch requeued, rerr := bg.requeueRefusedStart(ctx, runID, todo[re.Index].StepID, err); {
			case requeued:
				if rerr != nil {
					return nil, nil, rerr
				}
			case errors.Is(err, world.ErrConflict):
				st, gerr := bg.w.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: todo[re.Index].StepID})
				if gerr != nil {
					return nil, nil, gerr // the message comes back
				}
				if st.Status.Terminal() {
					ended = append(ended, st)
				}
			case errors.Is(err, world.ErrNotFound):
				// The step is gone.
			default:
				return nil, nil, err
			}
			todo = append(todo[:re.Index:re.Index], todo[re.Index+1:]...)
			if errors.Is(err, world.ErrConflict) && len(todo) > 1 {
				// Taken or ended by another executor (a session taking up
				// queued steps, most often several at once): read what is
				// left rather than meet each such step's refusal in turn.
				var more []*world.Step
				if todo, more, err = bg.rereadGroup(ctx, runID, todo); err != nil {
					return nil, nil, err
				}
				ended = append(ended, more...)
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for i, st := range todo[:n] {
			out = append(out, execOf(runMeta{}, res.Results[i].Step, st.Input))
		}
		todo = todo[n:]
	}
	return out, ended, nil
}

// recordGroup records step outcomes in as few Appends as the World takes.
// A refused Append (a step's attempt was taken over after its lease
// expired, or the run ended) is recorded again one outcome at a time, each
// as record does, so that one refusal does not lose the others.
func (bg *background) recordGroup(ctx context.Context, runID string, outs []outcome) (ended bool, err error) {
	for len(outs) > 0 {
		evs := make([]world.EventInput, len(outs))
		for i, o := range outs {
			evs[i] = o.event()
		}
		n := world.AppendFits(bg.w, evs)
		res, err := bg.appendNoted(ctx, &world.AppendParams{RunID: runID, Events: evs[:n]})
		if err != nil {
			if ctx.Err() != nil {
				return ended, ctx.Err()
			}
			for _, o := range outs[:n] {
				_, end, err := bg.steps.recordFinal(ctx, runID, o)
				if err != nil {
					return ended, err
				}
				ended = ended || end
			}
		} else if res.Run != nil && res.Run.Status.Terminal() {
			ended = true
		}
		outs = outs[n:]
	}
	return ended, nil
}
