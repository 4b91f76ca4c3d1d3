package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

var streamsListCmd = &command{
	group: "streams", name: "list", usage: "<runId>", nargs: 1,
	summary: "list a run's output streams",
	help: `
Lists the streams a run's steps wrote: the namespace ("(default)" for the
default stream, as read with -name ""), the number of chunks, and whether the
stream is closed (streams close when their run ends).

Examples:
  skein streams list wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			names, err := e.client.ListStreams(ctx, r.RunID)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintf(e.stdout, "run %s has no streams\n", r.RunID)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCHUNKS\tSTATE")
			for _, name := range names {
				info, err := e.client.StreamInfo(ctx, r.RunID, name)
				if err != nil {
					return err
				}
				state := "open"
				if info.Done {
					state = "closed"
				}
				shown := safeName(name)
				if name == "" {
					shown = "(default)"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", shown, info.TailIndex+1, state)
			}
			return tw.Flush()
		}
	},
}

var streamsReadCmd = &command{
	group: "streams", name: "read", usage: "<runId> [-name ns] [-start n] [-follow]", nargs: 1,
	summary: "print a run's stream (-follow: as it is written)",
	help: `
Prints the chunks of one of a run's streams, one per line: bytes as they are,
JSON values as JSON. -start picks the first chunk; a negative -start counts
back from the end (-start -5: the last five). With -follow, it keeps printing
chunks as they are written, until the stream is closed or the run ends (or
Ctrl-C). A stream the run does not have (yet) is said on stderr, naming the
streams it has: without -follow, the command exits 1 when the run has ended
(the stream will never exist: with -follow too), 0 otherwise; with -follow, it
waits for the stream to appear.

Examples:
  skein streams read wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T
  skein streams read wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -name progress -start -10
  skein streams read wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T -follow`,
	setup: func(fs *flag.FlagSet) runFunc {
		name := fs.String("name", "", "the stream's `namespace` (default: the default stream)")
		start := fs.Int64("start", 0, "the first chunk's `index`; negative counts back from the end")
		follow := fs.Bool("follow", false, "keep printing new chunks until the stream closes or the run ends")
		return func(ctx context.Context, e *env, args []string) error {
			r, err := e.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			info, err := e.client.StreamInfo(ctx, r.RunID, *name)
			if err != nil {
				return err
			}
			if info.TailIndex < 0 { // empty, or missing (a missing stream of a run at rest reads as done)
				if err := missingStream(ctx, e, r, *name, *follow); err != nil {
					return err
				}
			}
			from := *start
			if from < 0 {
				from = max(0, info.TailIndex+1+from)
			}
			rctx, stop := context.WithCancel(ctx)
			defer stop()
			var printed atomic.Int64 // the next index to print
			printed.Store(from)
			if !*follow {
				// Read what is there: stop after the current last chunk.
				if from > info.TailIndex {
					return nil
				}
			} else {
				// The reader ends when the stream closes; a run that ended
				// without closing it ends the follow once it is drained.
				go func() {
					for pause(rctx, 250*time.Millisecond) {
						run, err := e.w.GetRun(rctx, &world.GetRunParams{RunID: r.RunID})
						if err != nil || !run.Status.Terminal() {
							continue
						}
						if si, err := e.client.StreamInfo(rctx, r.RunID, *name); err == nil && printed.Load() > si.TailIndex {
							stop()
							return
						}
					}
				}()
			}
			for chunk, err := range e.client.ReadStream(rctx, r.RunID, client.StreamOptions{Namespace: *name, Start: from}) {
				if err != nil {
					if errors.Is(err, context.Canceled) && ctx.Err() == nil {
						return nil // the run ended
					}
					if ctx.Err() != nil {
						return nil // Ctrl-C
					}
					return e.sealedStreamError(err)
				}
				data := chunk.Data
				if len(data) == 0 || data[len(data)-1] != '\n' {
					data = append(data, '\n')
				}
				if _, err := e.stdout.Write(data); err != nil {
					return err
				}
				printed.Store(chunk.Index + 1)
				if !*follow && chunk.Index >= info.TailIndex {
					return nil
				}
			}
			return nil
		}
	},
}

// pause waits for d, or reports false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// missingStream tells, on stderr, that run r has no stream name (yet),
// naming the streams it has. It is an error when the run has ended and the
// read does not follow: the stream will never exist.
func missingStream(ctx context.Context, e *env, r *world.Run, name string, follow bool) error {
	names, err := e.client.ListStreams(ctx, r.RunID)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == name {
			return nil // it exists, empty
		}
	}
	what := fmt.Sprintf("stream %q", name)
	if name == "" {
		what = "default stream"
	}
	has := "it has no streams"
	if len(names) > 0 {
		shown := make([]string, len(names))
		for i, n := range names {
			shown[i] = fmt.Sprintf("%q", n)
			if n == "" {
				shown[i] = "(default)"
			}
		}
		has = "its streams: " + strings.Join(shown, ", ")
	}
	switch {
	case r.Status.Terminal():
		return fmt.Errorf("run %s (%s) has no %s (%s)", r.RunID, r.Status, what, has)
	case follow:
		fmt.Fprintf(e.stderr, "run %s has no %s yet (%s); waiting for it to appear\n", r.RunID, what, has)
		return nil
	}
	fmt.Fprintf(e.stderr, "run %s has no %s yet (%s; -follow waits for it)\n", r.RunID, what, has)
	return nil
}
