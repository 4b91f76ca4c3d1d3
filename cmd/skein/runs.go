package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

var runsListCmd = &command{
	group: "runs", name: "list", usage: "[-workflow name] [-status s] [-version v] [-attr key=value] [-limit n] [-json]",
	summary: "list runs, newest first",
	help: `
Lists runs, newest first: ID, workflow, the version of the code that started
it ("-" when none was recorded), status, when it was created and how long it
took (or has been going, marked with "…"). -version keeps the runs of one
version (- for none): with -status, what is left to drain before the
deployment running that version can go. With -json, prints one
JSON object per run instead (the stored run: input, output, error and all).
Held runs (their code diverges from their log) are listed again below the
table with the divergence and their next retry. -attr lists the runs with
that attribute (set at start, by the workflow or by a client), alone or
with the other filters. A run whose compensation failed for good is
marked "(compensation failed)" after its status, one whose compensations
are still to run "(compensating)"; -status selects by the status alone.

Examples:
  skein runs list
  skein runs list -status failed -limit 5
  skein runs list -status held
  skein runs list -version 3f2a9c1d0b7e -status running
  skein runs list -workflow fulfil-order -json | jq -r .runId
  skein runs list -attr tenant=acme -status failed`,
	setup: func(fs *flag.FlagSet) runFunc {
		var q runQuery
		fs.StringVar(&q.workflow, "workflow", "", "only runs of the workflow `name`")
		fs.StringVar(&q.status, "status", "", "only runs in `status` pending, running, held, completed, failed or cancelled")
		fs.StringVar(&q.version, "version", "", "only runs started by code of version `v` (- for none recorded)")
		fs.StringVar(&q.attr, "attr", "", "only runs with the attribute `key=value`")
		fs.IntVar(&q.limit, "limit", 20, "at most `n` runs")
		fs.BoolVar(&q.json, "json", false, "print JSON lines")
		return func(ctx context.Context, e *env, _ []string) error { return listRuns(ctx, e, q) }
	},
}

type runQuery struct {
	workflow, status, version, attr string
	limit                           int
	json                            bool
}

// keep reports whether r passes the query's filters that the World does
// not apply (the version).
func (q runQuery) keep(r *world.Run) bool {
	switch q.version {
	case "":
		return true
	case noVersion:
		return r.Version == ""
	}
	return r.Version == q.version
}

// noVersion shows, and selects, the runs that recorded no version.
const noVersion = "-"

// versionCell is a run's version as the runs table shows it: "-" when
// none, and clipped, since a version may be up to 128 bytes.
func versionCell(v string) string {
	if v == "" {
		return noVersion
	}
	return clip(safeName(v), 20)
}

// attrFilter parses -attr key=value (nil when not given).
func (q runQuery) attrFilter() (*world.AttributeFilter, error) {
	if q.attr == "" {
		return nil, nil
	}
	k, v, ok := strings.Cut(q.attr, "=")
	f := &world.AttributeFilter{Key: k, Value: v}
	if !ok {
		return nil, usagef("-attr %q: want key=value", q.attr)
	}
	if err := f.Check(); err != nil {
		return nil, usagef("-attr %q: %v", q.attr, err)
	}
	return f, nil
}

func listRuns(ctx context.Context, e *env, q runQuery) error {
	status := world.RunStatus(q.status)
	if q.status != "" && !status.Valid() {
		return usagef("unknown status %q (want pending, running, held, completed, failed or cancelled)", q.status)
	}
	if q.limit < 1 {
		return usagef("-limit must be at least 1")
	}
	attr, err := q.attrFilter()
	if err != nil {
		return err
	}
	if err := e.open(ctx); err != nil {
		return err
	}
	var runs []world.Run
	more := false
	for cursor := ""; len(runs) < q.limit; {
		page, err := e.w.ListRuns(ctx, &world.ListRunsParams{WorkflowName: q.workflow, Status: status, Attribute: attr,
			Pagination: world.Pagination{Limit: min(q.limit-len(runs), world.MaxPageLimit), Cursor: cursor}})
		if err != nil {
			return err
		}
		for _, r := range page.Items {
			if q.keep(&r) {
				runs = append(runs, r)
			}
		}
		more = page.HasMore
		if !page.HasMore {
			break
		}
		cursor = page.Cursor
	}
	if q.json {
		enc := json.NewEncoder(e.stdout)
		for _, r := range runs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stdout, "no runs")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATUS\tCREATED\tDURATION")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, safeName(r.WorkflowName), versionCell(r.Version), statusCell(&r), r.CreatedAt.Local().Format(timeLayout), runDuration(&r, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printHeld(e.stdout, runs, now, style{color: e.colorOn(e.stdout, false)})
	if more {
		fmt.Fprintf(e.stdout, "(more runs: -limit %d shows more)\n", q.limit*2)
	}
	return nil
}

const timeLayout = "2006-01-02 15:04:05"

// runDuration is how long a run took, or has been going ("…").
func runDuration(r *world.Run, now time.Time) string {
	if r.Status.Terminal() && !r.CompletedAt.IsZero() {
		return fmtDuration(r.CompletedAt.Sub(r.CreatedAt))
	}
	return fmtDuration(now.Sub(r.CreatedAt)) + "…"
}

// fmtDuration keeps durations short: 850ms, 3.42s, 2m5s, 26h3m.
func fmtDuration(d time.Duration) string { return timeline.FormatDuration(d) }

var runsShowCmd = &command{
	group: "runs", name: "show", usage: "<runId> [-no-color] [-width n] [-show-tokens]", nargs: 1,
	summary: "show a run and a timeline of its steps",
	help: `
Shows a run's fields (status, times, idempotency key, input, output, error,
and for a held run the divergence that holds it and its next retry)
and a timeline drawn in the terminal: one row per step, sleep and hook, in the
order the workflow created them, with a bar from its start to its end scaled
to the run's duration, like a Gantt chart. A step's bar shows each attempt:
the failed ones and the one that succeeded. Colours are used when stdout is a
terminal. A webhook's token is shown redacted (sha256:<first 12 hex
digits>, as the worker logs show it) unless -show-tokens is given: it is the
only credential the webhook's URL needs.

A run whose steps declared compensations (their undo) shows the run's
counts (owed, running, succeeded, failed, and whether its end asked for
them) and each such step's compensation: its status, attempts and last
error. A compensation that ran has a row of its own in the timeline
("undo <step>: <compensation>"), and its step's row shows the step's
compensation status.

Examples:
  skein runs show wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein runs show wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -width 80 -no-color | less`,
	setup: func(fs *flag.FlagSet) runFunc {
		noColor := fs.Bool("no-color", false, "no ANSI colours, even on a terminal")
		width := fs.Int("width", 48, "the timeline bar's width in `columns`")
		reveal := fs.Bool("show-tokens", false, "show webhook tokens in full (they are the webhooks' credentials)")
		return func(ctx context.Context, e *env, args []string) error {
			if *width < 10 || *width > 500 {
				return usagef("-width must be between 10 and 500")
			}
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			events, err := allEvents(ctx, e.w, r.RunID)
			if err != nil {
				return err
			}
			steps, err := allSteps(ctx, e.w, r.RunID)
			if err != nil {
				return err
			}
			st, now := style{color: e.colorOn(e.stdout, *noColor)}, time.Now()
			printRunFields(e.stdout, r, st, e.shownPayload)
			fmt.Fprintln(e.stdout)
			printCompensations(e.stdout, r, steps, now, st)
			drawTimeline(e.stdout, r, events, now, timelineOptions{width: *width, style: st, showTokens: *reveal})
			return nil
		}
	},
}

// allEvents reads a run's whole log.
func allEvents(ctx context.Context, w world.Storage, runID string) ([]world.Event, error) {
	return runrules.AllEvents(ctx, w, runID)
}

func printRunFields(w io.Writer, r *world.Run, st style, show func([]byte) string) {
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-10s %s\n", name, value)
		}
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05.000")
	}
	field("Run", st.bold(r.RunID))
	field("Workflow", safeName(r.WorkflowName))
	field("Version", safeName(r.Version))
	field("Status", st.status(string(r.Status)))
	field("Created", at(r.CreatedAt))
	field("Started", at(r.StartedAt))
	if !r.CompletedAt.IsZero() {
		field("Ended", fmt.Sprintf("%s (after %s)", at(r.CompletedAt), fmtDuration(r.CompletedAt.Sub(r.CreatedAt))))
	}
	if r.Cleanup != "" {
		field("Cleanup", r.Cleanup)
	}
	if c := compField(r); c != "" {
		color := ""
		if r.Compensations.Failed > 0 {
			color = red
		}
		field("Compensate", st.paint(color, c))
	}
	if r.Deactivated() {
		// Steps the run left running, its cleanup and compensations,
		// finished by then.
		field("At rest", fmt.Sprintf("%s (%s after the end)", at(r.DeactivatedAt), fmtDuration(r.DeactivatedAt.Sub(r.CompletedAt))))
	} else if r.Status.Terminal() && compPending(r) {
		field("At rest", "not yet: compensations are still to run")
	} else if r.Status.Terminal() {
		field("At rest", "not yet: steps it started may still be running")
	}
	field("Key", safeName(r.IdempotencyKey))
	var ec struct {
		Parent string `json:"parentRunId"`
	}
	if len(r.ExecutionContext) > 0 && json.Unmarshal(r.ExecutionContext, &ec) == nil {
		field("Parent", safeName(ec.Parent))
	}
	if len(r.Attributes) > 0 {
		b, _ := json.Marshal(r.Attributes)
		field("Attributes", safeText(string(b)))
	}
	field("Input", clip(safeText(show(r.Input)), 200))
	field("Output", clip(safeText(show(r.Output)), 200))
	if r.Error != nil {
		field("Error", st.paint(red, safeText(fmt.Sprintf("%s: %s", r.ErrorCode, r.Error.Message))))
	}
	if h := r.Hold; h != nil {
		field("Held", holdSummary(h, time.Now()))
		if h.Error != nil {
			field("Diverged", st.paint(red, safeText(h.Error.Message)))
		}
	}
	field("Reason", safeText(r.CancelReason))
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

var runsEventsCmd = &command{
	group: "runs", name: "events", usage: "<runId>", nargs: 1,
	summary: "print a run's event log as JSON lines",
	help: `
Prints a run's events in sequence order, one JSON object per line: runId,
eventId, seq, eventType, correlationId (the step, hook or wait), createdAt and
eventData.
Without -show-tokens, what resumes hooks is hidden: a webhook's token in
hook_created, and the token of every hook_received, hook_disposed and
hook_conflict, show as sha256:<first 12 hex digits> (as hooks list shows
them), and run_created has no "secret" field at all (the run's secret, from
which its generated hook tokens and its child runs' tokens derive). Such
output cannot be replay-checked for a run with generated hook tokens or
child runs: skeintest says so (ErrNoTokens) instead of checking it.

With -show-tokens, the output is the run's log as stored, a history file
that skeintest.CheckHistories replays against your code; runs export writes
such files for many runs at once, with their secrets. Keep them as you keep
the tokens: they resume the runs' webhooks.

Examples:
  skein runs events wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein runs events wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T | jq -c 'select(.eventType == "step_completed")'`,
	setup: func(fs *flag.FlagSet) runFunc {
		show := fs.Bool("show-tokens", false, "print webhook tokens and the run's secret in clear")
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdout)
			for cursor := ""; ; {
				page, err := e.w.ListEvents(ctx, &world.ListEventsParams{RunID: r.RunID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
				if err != nil {
					return err
				}
				for _, ev := range page.Items {
					if !*show {
						ev = redactEvent(ev)
					}
					if err := enc.Encode(ev); err != nil {
						return err
					}
				}
				if !page.HasMore {
					return nil
				}
				cursor = page.Cursor
			}
		}
	},
}

var runsCancelCmd = &command{
	group: "runs", name: "cancel", usage: "<runId> [-reason r] [-compensate]", nargs: 1,
	writes:  true,
	summary: "cancel a pending, running or held run",
	help: `
Cancels a pending, running or held run: its pending steps are refused, its hooks and
sleeps removed, and a step running in a worker sees its context cancelled.
Cancelling a cancelled run is not an error; a completed or failed one is.
The rest of the clean-up (closing the run's streams) happens when a worker
next runs on the store. With -compensate, the run's completed steps that
declared a compensation are compensated after the cancellation, the most
recently completed first, by that worker too (runs show says how that
goes).

Examples:
  skein runs cancel wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein runs cancel wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -reason "customer called"
  skein runs cancel wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -compensate`,
	setup: func(fs *flag.FlagSet) runFunc {
		reason := fs.String("reason", "", "why, recorded with the run")
		compensate := fs.Bool("compensate", false, "compensate the run's completed steps after the cancellation")
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return damaged(args[0], "cancelled", err)
			}
			switch r.Status {
			case world.RunStatusCancelled:
				fmt.Fprintf(e.stdout, "run %s was already cancelled\n", r.RunID)
				return nil
			case world.RunStatusCompleted, world.RunStatusFailed:
				return fmt.Errorf("run %s has already %s; there is nothing to cancel", r.RunID, r.Status)
			}
			var opts []client.CancelOption
			if *compensate {
				opts = append(opts, client.CancelCompensating())
			}
			if err := e.client.Cancel(ctx, r.RunID, *reason, opts...); err != nil {
				if errors.Is(err, world.ErrConflict) || errors.Is(err, world.ErrGone) {
					return fmt.Errorf("run %s has already finished: %w", r.RunID, err)
				}
				return damaged(r.RunID, "cancelled", err)
			}
			what := "its unfinished child runs cancelled, its streams closed"
			if *compensate {
				what += ", its completed steps compensated"
			}
			fmt.Fprintf(e.stdout, "cancelled run %s; what follows a cancellation (%s) happens when a worker next runs on %s\n", r.RunID, what, e.where())
			return nil
		}
	},
}

// redactEvent returns ev with its secrets redacted: a webhook's token (as
// hooks list shows it) and the run's secret. Other events are returned as
// they are.
func redactEvent(ev world.Event) world.Event { return redact.Event(ev) }
