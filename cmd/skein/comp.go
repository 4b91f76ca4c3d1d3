package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// What the CLI shows of compensations: the counts on a run (runs show, a
// marker in runs list), each compensable step's compensation (runs show),
// and the comp_* events (runs watch).

// compCounts is a run's compensation counts in words (timeline.CompCounts).
func compCounts(r *world.Run) string { return timeline.CompCounts(r) }

// neverOwed reports whether the compensations a run's completed steps
// declared will not run: it ended without asking for them.
func neverOwed(r *world.Run) bool { return r.Status.Terminal() && !r.Compensate }

// compPending reports whether a run still has compensations to run: one
// running, or one owed by a run whose end asked for them.
func compPending(r *world.Run) bool {
	return r.Compensations.Running > 0 || r.Compensate && r.Compensations.Owed > 0
}

// compField is the runs show line of a run's compensations: its counts,
// and whether its end asked for them ("" when neither).
func compField(r *world.Run) string {
	counts := compCounts(r)
	if r.Compensate {
		what := "asked for by the run's failure"
		if r.Status == world.RunStatusCancelled {
			what = "asked for by the cancellation"
		}
		if counts == "" {
			return what
		}
		return counts + " (" + what + ")"
	}
	return counts
}

// statusCell is a run's STATUS in runs list: its status, and a marker when
// a compensation failed for good or compensations are still to run.
func statusCell(r *world.Run) string {
	s := string(r.Status)
	switch {
	case r.Compensations.Failed > 0:
		s += " (compensation failed)"
	case compPending(r):
		s += " (compensating)"
	}
	return s
}

// compStatusColor is the colour of a step's compensation status.
func compStatusColor(status world.StepStatus) string {
	switch status {
	case world.StepStatusCompensated:
		return green
	case world.StepStatusCompensationFailed:
		return red
	}
	return yellow
}

// printCompensations lists the steps that declared a compensation: the
// step, its compensation step, the compensation's status (owed while the
// step's own status is completed; not run when the run ended without
// asking for them), its attempts and last error.
func printCompensations(w io.Writer, r *world.Run, steps []world.Step, now time.Time, st style) {
	first := true
	for _, s := range steps {
		c := s.Compensation
		if c == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "%s\n", st.bold("Compensations"))
			first = false
		}
		status := "not started"
		switch s.Status {
		case world.StepStatusCompensating, world.StepStatusCompensated, world.StepStatusCompensationFailed:
			status = st.paint(compStatusColor(s.Status), string(s.Status))
		case world.StepStatusCompleted:
			if neverOwed(r) {
				status = "not run"
			}
		default:
			status = "step " + string(s.Status)
		}
		line := fmt.Sprintf("  %s %s  undo %s  %s", s.StepID, safeName(s.StepName), safeName(c.Step), status)
		if c.Attempt > 0 {
			line += "  " + compAttempts(c)
		}
		if s.Status == world.StepStatusCompensating && c.RetryAfter.After(now) {
			line += "  retry in " + fmtDuration(c.RetryAfter.Sub(now))
		}
		if c.Error != nil {
			line += "  " + st.paint(red, clip(errText(c.Error), 120))
		}
		fmt.Fprintln(w, line)
	}
	if !first {
		fmt.Fprintln(w)
	}
}

// compAttempts counts a compensation's attempts as the timeline's TRY
// column and runs watch do: those whose executor recorded an outcome or
// still runs, then "+n lost" for those taken over after their lease
// expired ("1 attempt (+1 lost)" for two comp_started, the first lost).
func compAttempts(c *world.StepCompensation) string {
	s := count(c.Attempt-c.Interrupted, "attempt")
	if c.Interrupted > 0 {
		s += fmt.Sprintf(" (+%d lost)", c.Interrupted)
	}
	return s
}

// allSteps reads a run's steps.
func allSteps(ctx context.Context, w world.Storage, runID string) ([]world.Step, error) {
	var out []world.Step
	for cursor := ""; ; {
		p, err := w.ListSteps(ctx, &world.ListStepsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if !p.HasMore {
			return out, nil
		}
		cursor = p.Cursor
	}
}

// compDetail is what a runs watch line says of a comp_* event, "" for
// other events.
func compDetail(ev *world.Event) string {
	switch d := ev.Data.(type) {
	case *world.CompStarted:
		var parts []string
		if d.StepName != "" {
			parts = append(parts, "undo "+safeName(d.StepName))
		}
		if d.Compensation != "" {
			parts = append(parts, "with "+safeName(d.Compensation))
		}
		if d.Attempt > 0 {
			a := fmt.Sprintf("attempt %d", d.Attempt-d.Interrupted)
			if d.Interrupted > 0 {
				a += fmt.Sprintf(" (+%d lost)", d.Interrupted)
			}
			parts = append(parts, a)
		}
		return strings.Join(parts, " ")
	case *world.CompRetryScheduled:
		s := errText(d.Error)
		if !d.RetryAfter.IsZero() {
			s += "; retry at " + laterClock(d.RetryAfter, ev.CreatedAt)
		}
		return strings.TrimPrefix(s, "; ")
	case *world.CompSucceeded:
		return undid("undid", d.StepName)
	case *world.CompFailed:
		return strings.TrimPrefix(undid("could not undo", d.StepName)+": "+errText(d.Error), ": ")
	}
	return ""
}

// undid is "verb step", or "" when the event names no step.
func undid(verb, step string) string {
	if step == "" {
		return ""
	}
	return verb + " " + safeName(step)
}
