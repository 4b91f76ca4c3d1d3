package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/world"
)

var runsWatchCmd = &command{
	group: "runs", name: "watch", usage: "[runId] [-types t1,t2] [-snapshot] [-after cursor] [-json] [-show-tokens]",
	nargs: 0, optArgs: 1,
	summary: "print events as they commit (one run, or every run)",
	help: `
Prints events as they commit, one line each: the time, the run (when
watching every run), the sequence number, the type and what it concerns.
With a run ID, it prints the run's log from its first event (or, with
-snapshot, the run as it stands first: its status and its steps, hooks and
waits), follows the run and exits when the run ends, or, when its end
asked for its steps to be compensated, once their compensations have
ended (comp_started, comp_retry_scheduled, comp_succeeded and comp_failed,
each on the step it undoes). Without one, it follows every run from now
on, until interrupted (Ctrl-C). Started before the local store exists, it
says so and waits for the store to appear (a worker or the quickstart
creates it).

-json prints one JSON object per line instead: {"cursor": …, "event": …} or
{"cursor": …, "snapshot": …}. A cursor given back with -after resumes after
that line: nothing missed, nothing twice.

It works on a store a worker is writing (it reads the file as the worker
appends to it, looking every 5 to 100ms) and on a deployed stack (-stack,
…), where it polls DynamoDB.

Examples:
  skein runs watch wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein runs watch -types run_completed,run_failed
  skein runs watch wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -snapshot -json | jq -c .`,
	setup: func(fs *flag.FlagSet) runFunc {
		var o watchOptions
		fs.StringVar(&o.types, "types", "", "only events of these comma-separated `types` (step_completed,run_failed,…)")
		fs.BoolVar(&o.snapshot, "snapshot", false, "start with the run (or every unfinished run) as it stands")
		fs.StringVar(&o.after, "after", "", "resume after the `cursor` of a -json line")
		fs.BoolVar(&o.json, "json", false, "print JSON lines with their cursors")
		fs.BoolVar(&o.showTokens, "show-tokens", false, "show webhook tokens in full")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) == 1 {
				o.runID = args[0]
			}
			return watchRuns(ctx, e, o)
		}
	},
}

type watchOptions struct {
	runID, types, after        string
	snapshot, json, showTokens bool
}

func (o watchOptions) subscribe() (client.SubscribeOptions, error) {
	s := client.SubscribeOptions{RunID: o.runID, Snapshot: o.snapshot, After: o.after}
	for t := range strings.SplitSeq(o.types, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if _, err := world.NewEventData(world.EventType(t)); err != nil {
			return s, usagef("unknown event type %q in -types", t)
		}
		s.Types = append(s.Types, world.EventType(t))
	}
	return s, nil
}

func watchRuns(ctx context.Context, e *env, o watchOptions) error {
	so, err := o.subscribe()
	if err != nil {
		return err
	}
	e.waitStore = true
	if o.runID != "" {
		if _, err := e.getRun(ctx, o.runID); err != nil {
			return err
		}
	} else if err := e.open(ctx); err != nil {
		return err
	}
	for {
		ended, err := watchOnce(ctx, e, &so, o)
		if err != nil || !ended {
			return err
		}
		// The run has ended. The compensations its end asked for may
		// still be to come: follow them from where the watch stopped.
		r, err := e.w.GetRun(ctx, &world.GetRunParams{RunID: o.runID})
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case r.Compensations == (world.Compensations{}):
			return nil
		case r.Deactivated() || !compPending(r):
			// Over: a last pass prints what ended them, committed
			// since the watch stopped (up to r, at least).
			so.Snapshot = false
			_, err := watchOnce(ctx, e, &so, o)
			return err
		}
		so.Snapshot = false
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(compPoll):
		}
	}
}

// compPoll is how often a watch looks for the compensations that follow a
// run's end.
const compPoll = 200 * time.Millisecond

// watchOnce prints updates until the subscription ends. ended is true when
// a watched run's subscription ended with the run (so.After is where it
// stopped), false when interrupted.
func watchOnce(ctx context.Context, e *env, so *client.SubscribeOptions, o watchOptions) (ended bool, err error) {
	sub, err := e.client.Subscribe(ctx, *so)
	if errors.Is(err, world.ErrInvalid) && o.after != "" {
		return false, usagef("-after %q is not a cursor of this watch: %v", o.after, err)
	} else if err != nil {
		return false, err
	}
	defer sub.Close()
	for {
		u, err := sub.Next()
		switch {
		case errors.Is(err, io.EOF):
			return o.runID != "", nil
		case err != nil && ctx.Err() != nil:
			return false, nil // interrupted
		case err != nil:
			return false, err
		}
		if err := printUpdate(e.stdout, u, o); err != nil {
			return false, err
		}
		so.After = u.Cursor
	}
}

// printUpdate prints one update as a line.
func printUpdate(w io.Writer, u *client.Update, o watchOptions) error {
	if o.json {
		line := struct {
			Cursor   string          `json:"cursor"`
			Event    *world.Event    `json:"event,omitempty"`
			Snapshot *world.RunState `json:"snapshot,omitempty"`
		}{u.Cursor, u.Event, u.Snapshot}
		if !o.showTokens {
			r := redact.Update(u)
			line.Event, line.Snapshot = r.Event, r.Snapshot
		}
		return json.NewEncoder(w).Encode(line)
	}
	if s := u.Snapshot; s != nil {
		_, err := fmt.Fprintf(w, "%s  %s (%s) %s after event %d: %s, %s, %s\n",
			s.Run.UpdatedAt.Local().Format(clockLayout), s.Run.RunID, safeName(s.Run.WorkflowName), s.Run.Status,
			s.Run.LastSeq, count(len(s.Steps), "step"), count(len(s.Hooks), "hook"), count(len(s.Waits), "wait"))
		for _, st := range s.Steps {
			line := fmt.Sprintf("    step %s %s %s (attempt %d)", st.StepID, safeName(st.StepName), st.Status, st.Attempt)
			if c := st.Compensation; c != nil {
				line += fmt.Sprintf(", undo %s (attempt %d)", safeName(c.Step), c.Attempt)
			}
			fmt.Fprintln(w, line)
		}
		for _, h := range s.Hooks {
			fmt.Fprintf(w, "    hook %s token %s\n", h.HookID, shownToken(h.Token, h.IsWebhook, o.showTokens))
		}
		for _, wt := range s.Waits {
			fmt.Fprintf(w, "    wait %s %s until %s\n", wt.WaitID, wt.Status, laterClock(wt.ResumeAt, s.Run.UpdatedAt))
		}
		return err
	}
	ev := u.Event
	var b strings.Builder
	b.WriteString(ev.CreatedAt.Local().Format(clockLayout))
	if o.runID == "" {
		b.WriteString("  " + ev.RunID)
	}
	fmt.Fprintf(&b, "  %4d  %-15s", ev.Seq, ev.Type())
	if ev.CorrelationID != "" {
		b.WriteString("  " + ev.CorrelationID)
	}
	if d := eventDetail(ev, o.showTokens); d != "" {
		b.WriteString("  " + d)
	}
	_, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	return err
}

const clockLayout = "15:04:05.000"

// laterClock shows a time that follows ref (a timer's end, a retry's): the
// clock alone on ref's day, with its date on any other ("until 20:16:52"
// would not say which day a 48 h sleep ends).
func laterClock(t, ref time.Time) string {
	t, ref = t.Local(), ref.Local()
	if y, m, d := t.Date(); y == ref.Year() && m == ref.Month() && d == ref.Day() {
		return t.Format(clockLayout)
	}
	return t.Format("2006-01-02 " + clockLayout)
}

// count is "1 step", "2 steps".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// eventDetail is what a line says of an event beyond its type: a name, an
// error, a token.
func eventDetail(ev *world.Event, showTokens bool) string {
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		return safeName(d.WorkflowName)
	case *world.RunFailed:
		return d.ErrorCode + " " + errText(d.Error)
	case *world.RunCancelled:
		return safeText(d.Reason)
	case *world.RunHeld:
		return d.ErrorCode + " " + errText(d.Error)
	case *world.StepCreated:
		if d.Compensation != "" {
			return safeName(d.StepName) + " (undo: " + safeName(d.Compensation) + ")"
		}
		return safeName(d.StepName)
	case *world.CompStarted, *world.CompRetryScheduled, *world.CompSucceeded, *world.CompFailed:
		return compDetail(ev)
	case *world.StepFailed:
		return errText(d.Error)
	case *world.StepRetrying:
		return errText(d.Error)
	case *world.HookCreated:
		return "token " + shownToken(d.Token, d.IsWebhook, showTokens)
	case *world.WaitCreated:
		return "until " + laterClock(d.ResumeAt, ev.CreatedAt)
	}
	return ""
}

func errText(e *world.ErrorData) string {
	if e == nil {
		return ""
	}
	return safeText(e.Message)
}
