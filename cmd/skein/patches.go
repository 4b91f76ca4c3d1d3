package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

var patchesCheckCmd = &command{
	group: "patches", name: "check", usage: "<workflow> <patchId>", nargs: 2,
	summary: "tell whether a patch's old path can be removed",
	help: `
Lists the runs of a workflow, not ended, whose logs do not carry the marker of
a patch (workflow.Patched): runs that went past the patch with the code from
before it, and so replay its old path, and runs that have not reached it yet.
When there are none, no run needs the old path: keep only the new path and
replace Patched with workflow.Deprecate. Exits 1 while runs remain, and when
the workflow has no run at all in the store (a misspelled name: names are
case-sensitive), naming the workflows that have runs.

Examples:
  skein patches check order add-fraud-check`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			if err := e.open(ctx); err != nil {
				return err
			}
			rep, err := e.client.CheckPatch(ctx, &client.CheckPatchParams{WorkflowName: args[0], PatchID: args[1]})
			if err != nil {
				return err
			}
			if rep.Runs == 0 {
				return noRunsOf(ctx, e, args[0])
			}
			if rep.Retirable() {
				fmt.Fprintf(e.stdout, "patch %q of workflow %q can be retired: no unfinished run lacks its marker (%d took the new path)\n",
					args[1], args[0], len(rep.Marked))
				return nil
			}
			fmt.Fprintf(e.stdout, "patch %q of workflow %q is still needed: %s lack%s its marker\n",
				args[1], args[0], plural(len(rep.Open), "unfinished run"), verbS(len(rep.Open)))
			for _, id := range rep.Open {
				fmt.Fprintln(e.stdout, id)
			}
			return fmt.Errorf("patch %q: %s may need its old path", args[1], plural(len(rep.Open), "unfinished run"))
		}
	},
}

// maxNameScan bounds the runs noRunsOf reads to name the workflows that have
// runs.
const maxNameScan = 10 * world.MaxPageLimit

// noRunsOf is the error of a command about a workflow without runs in the
// store: it names the workflows that have runs (among the most recent
// ones), since the name is most often misspelled.
func noRunsOf(ctx context.Context, e *env, name string) error {
	seen := map[string]bool{}
	var names []string
	cursor := ""
	for read := 0; read < maxNameScan; {
		page, err := e.w.ListRuns(ctx, &world.ListRunsParams{Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			return err
		}
		for _, r := range page.Items {
			if !seen[r.WorkflowName] {
				seen[r.WorkflowName] = true
				names = append(names, r.WorkflowName)
			}
		}
		read += len(page.Items)
		if !page.HasMore || len(page.Items) == 0 {
			break
		}
		cursor = page.Cursor
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("no run of workflow %q exists in the store (the store has no runs at all)", name)
	}
	return fmt.Errorf("no run of workflow %q exists in the store (names are case-sensitive); workflows with runs: %s",
		name, strings.Join(names, ", "))
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// verbS is the s of a verb in the present tense after a count of n.
func verbS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}
