package sdk

import (
	"context"
	"fmt"
	"runtime"

	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/world"
)

// Patched reports whether the run takes the new path of a change guarded
// by the patch id. A run that reaches the call for the first time takes
// the new path (true) and records the patch's marker in its log with the
// next step, hook or timer it creates. A run whose log already holds
// operations past this point without the marker ran this part with the
// code from before the patch, and takes the old path (false), so that its
// replay matches its log. A run replaying its own marker takes the new
// path again.
//
//	if workflow.Patched(ctx, "add-fraud-check") {
//		if _, err := fraudCheck.Call(ctx, order); err != nil {
//			return err
//		}
//	}
//
// A run decides a patch once: later calls with the same id from the same
// place (a loop) return the first answer. Give each change its own id: the
// same id asked for at two places in the code panics, naming both, which
// fails the run. Steps added, removed or
// reordered inside either branch replay without divergence. Once
// Client.CheckPatch reports that no run needs the old path, retire the
// patch: keep only the new path and call Deprecate in place of Patched
// (or remove the call, once no run of code that still calls Patched can
// be replayed). id must be non-empty.
func Patched(ctx Context, id string) bool {
	if id == "" {
		panic("workflow.Patched: empty patch ID")
	}
	return ctx.impl().ec.Patched(id, callSite(2))
}

// callSite names the caller skip frames up, as file:line.
func callSite(skip int) string {
	_, file, line, ok := runtime.Caller(skip)
	if !ok {
		return "an unknown place"
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// Deprecate marks a retired patch: the code keeps only the new path, and a
// run that reaches the call still records the patch's marker, so that a
// deployment still running the Patched version of the code, should it
// replay the run, takes the new path too.
func Deprecate(ctx Context, id string) {
	if id == "" {
		panic("workflow.Deprecate: empty patch ID")
	}
	ctx.impl().ec.Patched(id, callSite(2))
}

// CheckPatchParams names a patch of a workflow.
type CheckPatchParams struct {
	WorkflowName string
	PatchID      string
}

// PatchReport tells whether a patch can be retired. Open lists the runs of
// the workflow not ended whose logs do not carry the patch's marker: runs
// that went past the patch with the old code (they need the old path until
// they end), and runs that have not reached it yet (they will take the new
// path, but the report cannot tell them apart without the code). Marked
// lists the runs not ended that took the new path. Runs counts the
// workflow's runs in the World, ended or not: none at all usually means a
// misspelled name (workflow names are case-sensitive).
type PatchReport struct {
	Open   []string
	Marked []string
	Runs   int
}

// Retirable reports whether no run not ended may need the patch's old
// path. It is true of a workflow without runs too: check Runs.
func (r *PatchReport) Retirable() bool { return len(r.Open) == 0 }

// CheckPatch reports which runs of a workflow not ended may still need the
// old path of a patch. It reads each such run's log.
func (c *Client) CheckPatch(ctx context.Context, p *CheckPatchParams) (*PatchReport, error) {
	if p == nil || p.WorkflowName == "" || p.PatchID == "" {
		return nil, fmt.Errorf("workflow: CheckPatch needs a workflow name and a patch ID")
	}
	rep := &PatchReport{}
	cursor := ""
	for {
		page, err := c.w.ListRuns(ctx, &world.ListRunsParams{
			WorkflowName: p.WorkflowName, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit},
		})
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			run := &page.Items[i]
			rep.Runs++
			if run.Status.Terminal() {
				continue
			}
			marked, err := c.hasPatch(ctx, run.RunID, p.PatchID)
			if err != nil {
				return nil, err
			}
			if marked {
				rep.Marked = append(rep.Marked, run.RunID)
			} else {
				rep.Open = append(rep.Open, run.RunID)
			}
		}
		if !page.HasMore || len(page.Items) == 0 {
			return rep, nil
		}
		cursor = page.Cursor
	}
}

// hasPatch reports whether a run's log carries the patch marker id.
func (c *Client) hasPatch(ctx context.Context, runID, id string) (bool, error) {
	cursor := ""
	for {
		page, err := c.w.ListEvents(ctx, &world.ListEventsParams{
			RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit},
		})
		if err != nil {
			return false, err
		}
		for i := range page.Items {
			if runrules.HasPatch(&page.Items[i], id) {
				return true, nil
			}
		}
		if !page.HasMore || len(page.Items) == 0 {
			return false, nil
		}
		cursor = page.Cursor
	}
}
