package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/skeinflow/skein/workflow"
)

var patchesCheckCmd = &command{
	group: "patches", name: "check", usage: "<workflow> <patchId>", nargs: 2,
	summary: "tell whether a patch's old path can be removed",
	help: `
Lists the runs of a workflow, not ended, whose logs do not carry the marker of
a patch (workflow.Patched): runs that went past the patch with the code from
before it, and so replay its old path, and runs that have not reached it yet.
When there are none, no run needs the old path: keep only the new path and
replace Patched with workflow.Deprecate. Exits 1 while runs remain.

Examples:
  skein patches check order add-fraud-check`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			if err := e.open(ctx); err != nil {
				return err
			}
			rep, err := e.client.CheckPatch(ctx, &workflow.CheckPatchParams{WorkflowName: args[0], PatchID: args[1]})
			if err != nil {
				return err
			}
			if rep.Retirable() {
				fmt.Fprintf(e.stdout, "patch %q of workflow %q can be retired: no unfinished run lacks its marker (%d took the new path)\n",
					args[1], args[0], len(rep.Marked))
				return nil
			}
			fmt.Fprintf(e.stdout, "patch %q of workflow %q is still needed: %d unfinished runs lack its marker\n",
				args[1], args[0], len(rep.Open))
			for _, id := range rep.Open {
				fmt.Fprintln(e.stdout, id)
			}
			return fmt.Errorf("patch %q: %d unfinished runs may need its old path", args[1], len(rep.Open))
		}
	},
}
