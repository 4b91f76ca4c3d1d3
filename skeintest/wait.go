package skeintest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// Suspension is what a suspended run waits for: hook payloads, the end of
// sleeps, or both (a hook with a timeout).
type Suspension struct {
	RunID string
	// Hooks are the run's active hooks, oldest first.
	Hooks []world.Hook
	// Sleeps are the times the run's pending sleeps end, soonest first.
	Sleeps []time.Time
}

// Token returns the token of the run's first active hook that a test may
// resume ("" if none): not the engine's own hook on which a parent waits
// for a child run (sdk.IsInternalToken), which only the child's end
// resumes.
func (s Suspension) Token() string {
	for _, h := range s.Hooks {
		if !sdk.IsInternalToken(h.Token) {
			return h.Token
		}
	}
	return ""
}

// Until returns when the run's soonest sleep ends (zero if none).
func (s Suspension) Until() time.Time {
	if len(s.Sleeps) == 0 {
		return time.Time{}
	}
	return s.Sleeps[0]
}

// String describes the suspension in words.
func (s Suspension) String() string {
	var parts []string
	for _, h := range s.Hooks {
		if sdk.IsInternalToken(h.Token) {
			parts = append(parts, "a child run")
			continue
		}
		parts = append(parts, fmt.Sprintf("hook %q", h.Token))
	}
	for _, at := range s.Sleeps {
		parts = append(parts, "sleep until "+fmtTime(at))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Wait waits until the run ends (completed, failed or cancelled) and
// returns it as stored. It fails the test if the run is held (its replay
// diverged from its log: the test would wait for ever) or does not end
// within the environment's timeout, saying what the run is doing.
func (e *Env) Wait(runID string) *world.Run {
	e.t.Helper()
	return e.waitFor("Wait", runID, func(r *world.Run) bool { return r.Status.Terminal() }, "end", e.describe)
}

// waitFor waits until done holds for the run and returns it as stored,
// moving the clock while nothing else can move. The check stops the clock
// at the settled point where done first holds, so that the run is seen at
// the time it got there. It fails the test if the run is held (its replay
// diverged from its log: the test would wait for ever) or done does not
// hold within the environment's timeout, saying (describe) what the run is
// doing; op names the wait, goal what the run did not do in time.
func (e *Env) waitFor(op, runID string, done func(*world.Run) bool, goal string, describe func(string) string) *world.Run {
	e.t.Helper()
	c := e.d.addCheck(func(ctx context.Context) bool {
		r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: runID})
		return err != nil || done(r) || r.Status == world.RunStatusHeld
	}, true)
	defer e.d.dropCheck(c)
	deadline := time.NewTimer(e.cfg.timeout)
	defer deadline.Stop()
	for {
		progressed := e.d.progressed()
		r, err := e.lw.GetRun(e.ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			e.t.Fatalf("skeintest: %s(%s): %v", op, runID, err)
		}
		switch {
		case done(r):
			return r
		case r.Status == world.RunStatusHeld:
			e.t.Fatalf("skeintest: run %s is held: %s", runID, describeHold(r))
		}
		select {
		case <-progressed:
		case <-c.done:
		case <-deadline.C:
			e.t.Fatalf("skeintest: run %s did not %s within %s (virtual time %s): %s",
				runID, goal, e.cfg.timeout, fmtTime(e.Now()), describe(runID))
		}
	}
}

// Result waits until the run ends (see Env.Wait) and returns its output,
// or its error: a *workflow.RunFailedError for a failed run,
// workflow.ErrRunCancelled for a cancelled one.
func Result[O any](e *Env, run *client.Run[O]) (O, error) {
	e.t.Helper()
	e.Wait(run.ID())
	return run.Result(e.ctx)
}

// WaitSuspended waits until the run is suspended: nothing of it is left to
// run at the current time, no step of it is pending or running, and it
// waits for a hook payload or a sleep's end. It returns what the run waits
// for, with the clock stopped there: a run going to sleep is seen asleep,
// and a hook with a timeout can be resumed before the timeout (the clock
// moves on at the test's next wait). While it waits, an automatic clock
// skips the timers before the suspension (a step's retries). It fails the
// test if the run ends or is held first, or after the timeout.
func (e *Env) WaitSuspended(runID string) Suspension {
	e.t.Helper()
	var got Suspension
	var failure string
	c := e.d.addCheck(func(ctx context.Context) bool {
		s, status, err := e.suspension(ctx, runID)
		switch {
		case err != nil:
			failure = err.Error()
		case status.Terminal():
			failure = fmt.Sprintf("run %s ended (%s) without suspending", runID, status)
		case status == world.RunStatusHeld:
			failure = fmt.Sprintf("run %s is held", runID)
		case s == nil:
			return false
		default:
			got = *s
		}
		return true
	}, true)
	e.await(c.done, func() string {
		e.d.dropCheck(c)
		return fmt.Sprintf("run %s did not suspend (virtual time %s): %s", runID, fmtTime(e.Now()), e.describe(runID))
	})
	if failure != "" {
		e.t.Fatalf("skeintest: WaitSuspended: %s", failure)
	}
	return got
}

// suspension reads what the run waits for: nil while a step of it is not
// finished or it waits for nothing.
func (e *Env) suspension(ctx context.Context, runID string) (*Suspension, world.RunStatus, error) {
	r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return nil, "", err
	}
	if r.Status.Terminal() || r.Status == world.RunStatusHeld {
		return nil, r.Status, nil
	}
	st, err := e.state(ctx, runID)
	if err != nil {
		return nil, r.Status, err
	}
	if st.unfinished > 0 || len(st.hooks)+len(st.sleeps) == 0 {
		return nil, r.Status, nil
	}
	return &Suspension{RunID: runID, Hooks: st.hooks, Sleeps: st.sleeps}, r.Status, nil
}

// runState is what a run has in flight.
type runState struct {
	unfinished int      // steps pending or running
	steps      []string // their descriptions
	hooks      []world.Hook
	sleeps     []time.Time
}

func (e *Env) state(ctx context.Context, runID string) (*runState, error) {
	var st runState
	for cursor := ""; ; {
		page, err := e.lw.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			return nil, err
		}
		for _, s := range page.Items {
			if !s.Status.Terminal() {
				st.unfinished++
				d := fmt.Sprintf("step %q %s (attempt %d)", s.StepName, s.Status, s.Attempt)
				if !s.RetryAfter.IsZero() && s.Status == world.StepStatusPending {
					d += ", retrying at " + fmtTime(s.RetryAfter)
				}
				st.steps = append(st.steps, d)
			}
		}
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	for cursor := ""; ; {
		page, err := e.lw.ListHooks(ctx, &world.ListHooksParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			return nil, err
		}
		st.hooks = append(st.hooks, page.Items...)
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	events, err := e.events(ctx, runID)
	if err != nil {
		return nil, err
	}
	waits := map[string]time.Time{}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *world.WaitCreated:
			waits[ev.CorrelationID] = d.ResumeAt
		case *world.WaitCompleted:
			delete(waits, ev.CorrelationID)
		}
	}
	for _, at := range waits {
		st.sleeps = append(st.sleeps, at)
	}
	slices.SortFunc(st.sleeps, func(a, b time.Time) int { return a.Compare(b) })
	return &st, nil
}

// describe says in words what a run is doing, for a failure message.
func (e *Env) describe(runID string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), time.Second)
	defer cancel()
	r, err := e.lw.GetRun(ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		return err.Error()
	}
	if r.Status == world.RunStatusHeld {
		return describeHold(r)
	}
	st, err := e.state(ctx, runID)
	if err != nil {
		return err.Error()
	}
	parts := []string{"status " + string(r.Status)}
	parts = append(parts, st.steps...)
	if s := (Suspension{Hooks: st.hooks, Sleeps: st.sleeps}); len(s.Hooks)+len(s.Sleeps) > 0 {
		parts = append(parts, "waiting for "+s.String())
	}
	if len(st.hooks) > 0 {
		parts = append(parts, "(resume hooks with Env.ResumeHook)")
	}
	if e.cfg.manual && len(st.sleeps) > 0 {
		parts = append(parts, "(the clock is manual: call Env.Advance)")
	}
	return strings.Join(parts, "; ")
}

func describeHold(r *world.Run) string {
	if r.Hold == nil {
		return "held"
	}
	msg := "held: " + r.Hold.ErrorCode
	if r.Hold.Error != nil {
		msg += ": " + r.Hold.Error.Message
	}
	return msg
}
