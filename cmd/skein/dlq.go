package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/skeinflow/skein/internal/dlq"
	"github.com/skeinflow/skein/webui"
)

// dlqQueue is the part of the SQS client skein dlq uses.
type dlqQueue = dlq.Queue

var dlqRedriveCmd = &command{
	group: "dlq", name: "redrive", usage: "[-dry-run] [-dlq-url url] [-max n]",
	summary: "move a deployed stack's dead letters back to the work queue, saying what they resume",
	help: `
Reads the dead-letter queue of a deployed stack (the one the work queue's
redrive policy names, or -dlq-url), lists each message with the run it
belongs to, the run's workflow and status, and what moving it back does,
then moves every Skein message back to the work queue as a new message
(its receive count starts afresh) and deletes it from the dead-letter
queue. A message of a run that is at rest has nothing left to resume: it
is moved too, and the engine drops it. A body that is not a Skein message
stays in the dead-letter queue, to be inspected. With -dry-run, only lists.
At most -max messages (default 1000) are read per command.

Examples:
  skein -stack my-app dlq redrive -dry-run
  skein -stack my-app dlq redrive`,
	setup: func(fs *flag.FlagSet) runFunc {
		dry := fs.Bool("dry-run", false, "list what a redrive would resume, and move nothing")
		dlqURL := fs.String("dlq-url", "", "the dead-letter queue's `url` (default: the work queue's redrive policy's)")
		maxN := fs.Int("max", dlq.MaxDefault, "read at most `n` dead letters")
		return func(ctx context.Context, e *env, _ []string) error {
			if !e.remote.set() {
				return usagef("skein dlq works on a deployed stack: pass -stack (or -table, -queue-url and -bucket)")
			}
			if *maxN <= 0 {
				return usagef("-max must be positive, got %d", *maxN)
			}
			if err := e.open(ctx); err != nil {
				return err
			}
			if e.sqs == nil {
				return errors.New("no SQS client for the stack")
			}
			r := &dlq.Redriver{Q: e.sqs, W: e.w, WorkURL: e.remote.queueURL, DLQURL: *dlqURL}
			return redrive(ctx, e, r, *dry, *maxN)
		}
	},
}

// redrive runs r and prints what it read and did.
func redrive(ctx context.Context, e *env, r *dlq.Redriver, dry bool, maxN int) error {
	rep, err := r.Redrive(ctx, dry, maxN)
	if rep != nil {
		for _, w := range rep.Warnings {
			fmt.Fprintf(e.stderr, "skein dlq redrive: %s\n", w)
		}
	}
	if rep == nil || (err != nil && len(rep.Letters) == 0) {
		return remoteError(err)
	}
	if len(rep.Letters) == 0 {
		fmt.Fprintf(e.stdout, "the dead-letter queue %s is empty\n", rep.DLQURL)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tRUN\tWORKFLOW\tSTATUS\tREDRIVE")
	for _, l := range rep.Letters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.MessageID, dash(l.RunID), dash(l.Workflow), dash(l.Status), l.Does)
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	switch {
	case err != nil:
		return remoteError(err)
	case dry:
		fmt.Fprintf(e.stdout, "dry run: %d dead letters listed, nothing moved\n", len(rep.Letters))
	default:
		fmt.Fprintf(e.stdout, "moved %d dead letters back to the work queue; %d left in the dead-letter queue\n", rep.Moved, rep.Kept)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dashboardDLQ is the dashboard's dead-letter page's queue on a deployed
// stack: skein dlq redrive's code (dlq.Redriver.Redrive), without
// -dlq-url (the work queue's redrive policy names the queue).
type dashboardDLQ struct{ r *dlq.Redriver }

// DeadLetters reads up to dlq.MaxDefault dead letters and, with redrive,
// moves the Skein ones back.
func (d dashboardDLQ) DeadLetters(ctx context.Context, redrive bool) ([]webui.DeadLetter, error) {
	rep, err := d.r.Redrive(ctx, !redrive, dlq.MaxDefault)
	if rep == nil {
		return nil, remoteError(err)
	}
	out := make([]webui.DeadLetter, len(rep.Letters))
	for i, l := range rep.Letters {
		out[i] = webui.DeadLetter{MessageID: l.MessageID, RunID: l.RunID, Workflow: l.Workflow, Status: l.Status,
			Redrive: l.Does, Moves: l.Skein, Moved: l.Moved}
	}
	if err != nil {
		return out, remoteError(err)
	}
	return out, nil
}
