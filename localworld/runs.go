package localworld

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// GetRun returns a run, or world.ErrNotFound.
func (w *store) GetRun(ctx context.Context, p *world.GetRunParams) (*world.Run, error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	var run *world.Run
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		run, err = getRun(tx, p.RunID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, fmt.Errorf("%w: run %s", world.ErrNotFound, p.RunID)
	}
	return run, nil
}

// ListRuns lists runs newest first (by creation time, then ID), through the
// index that matches the workflow and status filters. Runs are always
// listed newest first; Pagination.Descending does not reverse that. The
// attribute filter has no index of its own: the runs of the chosen index
// are read and those without the attribute skipped.
func (w *store) ListRuns(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	if p == nil {
		p = &world.ListRunsParams{}
	}
	if p.Status != "" && !p.Status.Valid() {
		return nil, invalid("unknown run status %q", p.Status)
	}
	if p.Attribute != nil {
		if err := p.Attribute.Check(); err != nil {
			return nil, err
		}
	}
	l := listing{kind: "runs", desc: true, page: p.Pagination}
	switch {
	case p.WorkflowName != "" && p.Status != "":
		l.bucket, l.prefix = bRunsByNameStatus, newKey().str(p.WorkflowName).str(string(p.Status))
	case p.WorkflowName != "":
		l.bucket, l.prefix = bRunsByName, newKey().str(p.WorkflowName)
	case p.Status != "":
		l.bucket, l.prefix = bRunsByStatus, newKey().str(string(p.Status))
	default:
		l.bucket, l.prefix = bRunsByTime, newKey()
	}
	var page *world.Page[world.Run]
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		page, err = scanPage(tx, l, func(suffix, _ []byte) (world.Run, bool, error) {
			if len(suffix) <= 8 {
				return world.Run{}, false, nil
			}
			r, err := getRun(tx, string(suffix[8:]))
			if err != nil || r == nil || !p.Attribute.Matches(r) {
				return world.Run{}, false, err
			}
			return *r, true, nil
		})
		return err
	})
	return page, err
}

func runKey(id string) []byte { return newKey().raw(id) }

func getRun(tx kvTx, id string) (*world.Run, error) { return getRunVia(tx, id, nil) }

// getRunVia is getRun through c (nil: none; decoded.go).
func getRunVia(tx kvTx, id string, c *decodedCache) (*world.Run, error) {
	if id == "" {
		return nil, nil
	}
	var m *decodedMap[world.Run]
	if c != nil {
		m = &c.runs
	}
	return getDecoded(tx, bRuns, runKey(id), c, m)
}

// putRun stores a run and keeps its indexes: created once for a new run,
// moved when the status changes.
func putRun(tx kvTx, old, run *world.Run) error {
	if err := putEncoded(tx, bRuns, runKey(run.RunID), run); err != nil {
		return err
	}
	if old == nil {
		if err := tx.put(bRunsByTime, newKey().time(run.CreatedAt).raw(run.RunID), nil); err != nil {
			return err
		}
		if err := tx.put(bRunsByName, runNameKey(run), nil); err != nil {
			return err
		}
		if run.IdempotencyKey != "" {
			if err := tx.put(bRunIdem, runIdemKey(run.IdempotencyKey), []byte(run.RunID)); err != nil {
				return err
			}
		}
	} else if old.Status != run.Status {
		if err := tx.del(bRunsByStatus, runStatusKey(old)); err != nil {
			return err
		}
		if err := tx.del(bRunsByNameStatus, runNameStatusKey(old)); err != nil {
			return err
		}
	} else {
		return nil
	}
	if err := tx.put(bRunsByStatus, runStatusKey(run), nil); err != nil {
		return err
	}
	return tx.put(bRunsByNameStatus, runNameStatusKey(run), nil)
}

func runNameKey(r *world.Run) []byte {
	return newKey().str(r.WorkflowName).time(r.CreatedAt).raw(r.RunID)
}

func runStatusKey(r *world.Run) []byte {
	return newKey().str(string(r.Status)).time(r.CreatedAt).raw(r.RunID)
}

func runNameStatusKey(r *world.Run) []byte {
	return newKey().str(r.WorkflowName).str(string(r.Status)).time(r.CreatedAt).raw(r.RunID)
}
