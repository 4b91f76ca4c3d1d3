package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// A run is held when its replay diverged from its log: the code that ran
// it changed incompatibly. These commands show why, retry it after a fix,
// or give up on it.

var runsRetryCmd = &command{
	group: "runs", name: "retry", usage: "<runId>", nargs: 1,
	writes:  true,
	summary: "replay a held run now, after deploying code that fits its log; wake any other run not at rest",
	help: `
Asks for a held run (status held: the code replaying it asks for other steps,
hooks or sleeps than its log records) to be replayed now instead of at its
next retry. Deploy code compatible with the run's log first: the run then goes
on where it stopped. If it still diverges it is held again, with the new
divergence. The retry happens when a worker next runs on the store.

A pending or running run is woken instead: a continuation of it is queued,
which picks up whatever the run is waiting for. That is how a run whose store
was damaged (items of it deleted behind Skein) goes on once the items are
restored: while damaged, its messages were dropped and nothing was written to
it. So is a run that has ended (cancelled, failed, completed) but is not at
rest yet: a step of it still running, its compensations or cleanup owed; the
worker finishes that rest and the run comes to rest (run_deactivated). The
command reads the run's log first and refuses, writing nothing, while it is
still damaged. A run at rest has nothing to retry.

Examples:
  skein runs list -status held
  skein runs retry wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return damaged(args[0], "woken", err)
			}
			switch r.Status {
			case world.RunStatusPending, world.RunStatusRunning:
				return wakeRun(ctx, e, r)
			case world.RunStatusHeld:
			default:
				if r.Status.Terminal() && !r.Deactivated() {
					return wakeRun(ctx, e, r)
				}
				return fmt.Errorf("run %s is %s and at rest, not held; there is nothing to retry", r.RunID, r.Status)
			}
			if err := e.client.RetryRun(ctx, r.RunID); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "run %s will be replayed when a worker next runs (held since %s, attempt %d)\n",
				r.RunID, r.Hold.Since.Local().Format(timeLayout), r.Hold.Attempt)
			return nil
		}
	},
}

var runsFailCmd = &command{
	group: "runs", name: "fail", usage: "<runId> [-reason r] [-compensate]", nargs: 1,
	writes:  true,
	summary: "end a held (or any unfinished) run as failed",
	help: `
Fails a pending, running or held run for good, recording the reason: what to do
with a held run whose code will not come back. A held run fails with its hold's
code (REPLAY_DIVERGENCE) and the divergence as the cause; its client and its
parent run see the failure. The rest of the clean-up (closing the run's
streams, telling a parent run) happens when a worker next runs on the store.

With -compensate the run's completed steps that declared a compensation are
undone after the end, the most recently completed first, as for a saga that
fails (WithCompensateOnFailure); the worker that next runs on the store runs
them. Without it nothing is undone: the CLI does not know how the run's
workflow is defined, so a saga failed here keeps what it booked unless asked,
and the command warns when the run has completed steps that declared a
compensation.

Examples:
  skein runs fail wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -reason "v1 of the workflow is gone"
  skein runs fail wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -compensate`,
	setup: func(fs *flag.FlagSet) runFunc {
		reason := fs.String("reason", "", "why, recorded in the run's error")
		compensate := fs.Bool("compensate", false, "undo the run's completed steps (their compensations) after the failure")
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return damaged(args[0], "failed", err)
			}
			if r.Status.Terminal() {
				return fmt.Errorf("run %s has already %s; there is nothing to fail", r.RunID, r.Status)
			}
			opt := client.FailWithoutCompensating()
			if *compensate {
				opt = client.FailCompensating()
			}
			if err := e.client.FailRun(ctx, r.RunID, *reason, opt); err != nil {
				if errors.Is(err, world.ErrConflict) {
					return fmt.Errorf("run %s has already finished: %w", r.RunID, err)
				}
				return damaged(r.RunID, "failed", err)
			}
			if *compensate {
				fmt.Fprintf(e.stdout, "failed run %s; its completed steps are compensated when a worker next runs on %s\n", r.RunID, e.where())
				return nil
			}
			fmt.Fprintf(e.stdout, "failed run %s\n", r.RunID)
			if n := r.Compensations.Owed; n > 0 {
				fmt.Fprintf(e.stderr, "skein: warning: run %s has %s that declared a compensation, "+
					"not undone: the run failed without compensating (-compensate undoes them; the CLI cannot tell "+
					"whether the workflow compensates on failure)\n", r.RunID, plural(n, "completed step"))
			}
			return nil
		}
	},
}

// holdSummary is one line on a run's hold: its code, attempts and next
// retry.
func holdSummary(h *world.RunHold, now time.Time) string {
	retry := "due now"
	if d := h.RetryAt.Sub(now); d > 0 {
		retry = "in " + fmtDuration(d)
	}
	return fmt.Sprintf("%s since %s, attempt %d, next retry %s (skein runs retry)",
		h.ErrorCode, h.Since.Local().Format(timeLayout), h.Attempt, retry)
}

// printHeld lists the held runs among runs, with their divergence, after
// the runs table.
func printHeld(w io.Writer, runs []world.Run, now time.Time, st style) {
	first := true
	for _, r := range runs {
		if r.Status != world.RunStatusHeld || r.Hold == nil {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nHeld: the code replaying these runs diverges from their logs")
			first = false
		}
		fmt.Fprintf(w, "  %s  %s\n", r.RunID, holdSummary(r.Hold, now))
		if r.Hold.Error != nil {
			fmt.Fprintf(w, "    %s\n", st.paint(red, clip(safeText(r.Hold.Error.Message), 300)))
		}
	}
}
