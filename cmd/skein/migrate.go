package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/skeinflow/skein/localworld"
)

var storeMigrateCmd = &command{
	group: "store", name: "migrate", usage: "-to new-file [-from old-file]", nargs: 0,
	summary: "copy the runs of a bbolt-format store to a new log-format store",
	help: `
Copies every run of a local store in the bbolt format (which earlier versions
could make, and this one no longer runs on) to a new store in the log format,
the only local format: -from names the old store (default: the -db store),
-to the new file, which must not exist. The old store is read, never changed:
keep it until you have checked the new one, then point -db (or $SKEIN_DB, or
your program's localworld.Config.Path) at the new file.

bbolt keeps no checksum of its data, so the copy checks what it can: both of
the file's meta pages and its size first (a damaged one is refused, naming the
damage), then every entry (a record must decode and name the key it is stored
under, an index entry must be empty, an ID must be one). A damaged page or
entry is skipped, never copied, and listed with the runs it belonged to. A
value damaged into another well-formed value cannot be detected.

Stop the program that runs on the old store first (it holds the store's lock).

Examples:
  skein store migrate -from skein.db -to skein.skein
  skein -db orders.db store migrate -to orders.skein`,
	setup: func(fs *flag.FlagSet) runFunc {
		var from, to string
		fs.StringVar(&from, "from", "", "the bbolt-format store `file` to copy (default: the -db store)")
		fs.StringVar(&to, "to", "", "the new log-format store `file` to write (must not exist)")
		return func(_ context.Context, e *env, _ []string) error {
			if from == "" {
				from = e.db
			}
			if to == "" {
				return usagef("-to is required: the new store's file, which must not exist")
			}
			rep, err := localworld.MigrateBolt(from, to)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "copied %s (%d entries) from %s to %s\n", plural(rep.Runs, "run"), rep.Entries, from, to)
			if rep.SkippedCount == 0 {
				fmt.Fprintf(e.stdout, "nothing was skipped; %s is untouched: use %s from now on (-db %s)\n", from, to, to)
				return nil
			}
			fmt.Fprintf(e.stdout, "skipped %s that did not check (damage in %s):\n", plural(rep.SkippedCount, "entry"), from)
			for _, s := range rep.Skipped {
				fmt.Fprintf(e.stdout, "  %s\n", safeLines(s))
			}
			if n := rep.SkippedCount - len(rep.Skipped); n > 0 {
				fmt.Fprintf(e.stdout, "  ... and %d more\n", n)
			}
			if len(rep.DamagedRuns) > 0 {
				fmt.Fprintf(e.stdout, "runs that lost something (check them with skein -db %s runs show <runId>):\n", to)
				for _, id := range rep.DamagedRuns {
					fmt.Fprintf(e.stdout, "  %s\n", id)
				}
			}
			return fmt.Errorf("%s migrated with %s skipped: check the runs listed before relying on %s",
				from, plural(rep.SkippedCount, "damaged entry"), to)
		}
	},
}
