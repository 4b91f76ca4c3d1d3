package skeintest

import (
	"context"
	"fmt"
	"strings"

	"github.com/skeinflow/skein/world"
)

// Events returns the run's event log, oldest first.
func (e *Env) Events(runID string) []world.Event {
	e.t.Helper()
	events, err := e.events(e.ctx, runID)
	if err != nil {
		e.t.Fatalf("skeintest: Events(%s): %v", runID, err)
	}
	return events
}

func (e *Env) events(ctx context.Context, runID string) ([]world.Event, error) {
	var out []world.Event
	for cursor := ""; ; {
		page, err := e.lw.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if !page.HasMore {
			return out, nil
		}
		cursor = page.Cursor
	}
}

// ExpectEvents checks that the run's log holds events of the given types in
// this order, others possibly in between, and fails the test showing the
// log if it does not.
func (e *Env) ExpectEvents(runID string, want ...world.EventType) {
	e.t.Helper()
	events := e.Events(runID)
	i := 0
	for _, ev := range events {
		if i < len(want) && ev.Type() == want[i] {
			i++
		}
	}
	if i < len(want) {
		e.t.Fatalf("skeintest: run %s: no %s after the events matching %v; the log:\n%s", runID, want[i], want[:i], FormatEvents(events))
	}
}

// ExpectStepAttempts checks that the step (by name) was started n times in
// the run, over all its calls, and fails the test showing the log if not.
// The attempts of a step run as a compensation (workflow.WithCompensation:
// comp_started naming it) count too: the step's body ran that many times,
// whether called by the workflow or to undo another step. Wait for the
// compensations first (Env.WaitDeactivated): skeintest.Result returns at
// the run's end, before the compensations a failed saga runs after it.
func (e *Env) ExpectStepAttempts(runID, step string, n int) {
	e.t.Helper()
	events := e.Events(runID)
	if got := StepAttempts(events, step); got != n {
		e.t.Fatalf("skeintest: run %s: step %q started %d times (%d as a compensation), want %d; the log:\n%s",
			runID, step, got, CompensationAttempts(events, step), n, FormatEvents(events))
	}
}

// ExpectStatus checks the run's status and fails the test, describing the
// run, if it differs.
func (e *Env) ExpectStatus(runID string, want world.RunStatus) {
	e.t.Helper()
	r, err := e.lw.GetRun(e.ctx, &world.GetRunParams{RunID: runID})
	if err != nil {
		e.t.Fatalf("skeintest: ExpectStatus(%s): %v", runID, err)
	}
	if r.Status != want {
		e.t.Fatalf("skeintest: run %s is %s, want %s: %s", runID, r.Status, want, e.describe(runID))
	}
}

// StepAttempts counts the starts of the named step in events: its calls'
// attempts (step_started) and its attempts as a compensation (comp_started,
// see CompensationAttempts).
func StepAttempts(events []world.Event, step string) int {
	names := map[string]string{}
	n := 0
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *world.StepCreated:
			names[ev.CorrelationID] = d.StepName
		case *world.StepStarted:
			if names[ev.CorrelationID] == step {
				n++
			}
		case *world.CompStarted:
			if d.Compensation == step {
				n++
			}
		}
	}
	return n
}

// FormatEvents renders events one a line (sequence number, virtual time,
// type and the essentials of the payload), for failure messages and t.Log.
func FormatEvents(events []world.Event) string {
	var b strings.Builder
	names := map[string]string{}
	for _, ev := range events {
		fmt.Fprintf(&b, "%4d  %s  %-15s", ev.Seq, fmtTime(ev.CreatedAt), ev.Type())
		switch d := ev.Data.(type) {
		case *world.RunCreated:
			fmt.Fprintf(&b, "  %s", d.WorkflowName)
		case *world.RunFailed:
			fmt.Fprintf(&b, "  %s %s", d.ErrorCode, errText(d.Error))
		case *world.RunHeld:
			fmt.Fprintf(&b, "  %s %s", d.ErrorCode, errText(d.Error))
		case *world.StepCreated:
			names[ev.CorrelationID] = d.StepName
			fmt.Fprintf(&b, "  %s", d.StepName)
			if d.Compensation != "" {
				fmt.Fprintf(&b, " (undo: %s)", d.Compensation)
			}
		case *world.StepStarted:
			fmt.Fprintf(&b, "  %s attempt %d", names[ev.CorrelationID], d.Attempt)
		case *world.StepCompleted:
			fmt.Fprintf(&b, "  %s", names[ev.CorrelationID])
		case *world.StepFailed:
			fmt.Fprintf(&b, "  %s: %s", names[ev.CorrelationID], errText(d.Error))
		case *world.StepRetrying:
			fmt.Fprintf(&b, "  %s at %s: %s", names[ev.CorrelationID], fmtTime(d.RetryAfter), errText(d.Error))
		case *world.CompStarted:
			fmt.Fprintf(&b, "  %s undo %s attempt %d", names[ev.CorrelationID], d.Compensation, d.Attempt)
		case *world.CompRetryScheduled:
			fmt.Fprintf(&b, "  %s at %s: %s", names[ev.CorrelationID], fmtTime(d.RetryAfter), errText(d.Error))
		case *world.CompSucceeded:
			fmt.Fprintf(&b, "  %s", names[ev.CorrelationID])
		case *world.CompFailed:
			fmt.Fprintf(&b, "  %s: %s", names[ev.CorrelationID], errText(d.Error))
		case *world.HookCreated:
			fmt.Fprintf(&b, "  %q", d.Token)
		case *world.HookReceived:
			fmt.Fprintf(&b, "  %s", d.Payload)
		case *world.WaitCreated:
			fmt.Fprintf(&b, "  until %s", fmtTime(d.ResumeAt))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func errText(d *world.ErrorData) string {
	if d == nil {
		return ""
	}
	return d.Message
}
