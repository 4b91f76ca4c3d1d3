package localworld

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// GetStep returns a step of a run, or world.ErrNotFound.
func (w *store) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	if p == nil || p.RunID == "" || p.StepID == "" {
		return nil, invalid("run and step IDs required")
	}
	var st *world.Step
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		st, err = getStep(tx, p.RunID, p.StepID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%w: step %s of run %s", world.ErrNotFound, p.StepID, p.RunID)
	}
	return st, nil
}

// ListSteps lists a run's steps in creation order (the order of their
// step_created events).
func (w *store) ListSteps(ctx context.Context, p *world.ListStepsParams) (*world.Page[world.Step], error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	l := listing{kind: "steps:" + p.RunID, bucket: bStepsByRun, prefix: newKey().str(p.RunID), desc: p.Descending, page: p.Pagination}
	var page *world.Page[world.Step]
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		page, err = scanPage(tx, l, func(suffix, _ []byte) (world.Step, bool, error) {
			_, id, ok := readU64(suffix)
			if !ok {
				return world.Step{}, false, nil
			}
			st, err := getStep(tx, p.RunID, string(id))
			if err != nil || st == nil {
				return world.Step{}, false, err
			}
			return *st, true, nil
		})
		return err
	})
	return page, err
}

func stepKey(runID, stepID string) []byte { return newKey().str(runID).raw(stepID) }

func getStep(tx kvTx, runID, stepID string) (*world.Step, error) {
	return getStepVia(tx, runID, stepID, nil)
}

// getStepVia is getStep through c (nil: none; decoded.go).
func getStepVia(tx kvTx, runID, stepID string, c *decodedCache) (*world.Step, error) {
	if stepID == "" {
		return nil, nil
	}
	var m *decodedMap[world.Step]
	if c != nil {
		m = &c.steps
	}
	return getDecoded(tx, bSteps, stepKey(runID, stepID), c, m)
}

// putStep stores a step; a new one is indexed under its run at the sequence
// number of its step_created event.
func putStep(tx kvTx, st *world.Step, created bool, seq int64) error {
	if err := putEncoded(tx, bSteps, stepKey(st.RunID, st.StepID), st); err != nil {
		return err
	}
	if !created {
		return nil
	}
	return tx.put(bStepsByRun, newKey().str(st.RunID).seq(seq).raw(st.StepID), nil)
}

// storedHook is a hook as stored: the entity and the sequence number of its
// hook_created event, which orders it among its run's hooks.
type storedHook struct {
	world.Hook
	Seq int64 `json:"seq"`
}

// GetHook returns an active hook, or world.ErrNotFound.
func (w *store) GetHook(ctx context.Context, p *world.GetHookParams) (*world.Hook, error) {
	if p == nil || p.HookID == "" {
		return nil, invalid("hook ID required")
	}
	var h *storedHook
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		h, err = getHook(tx, p.HookID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: hook %s", world.ErrNotFound, p.HookID)
	}
	return &h.Hook, nil
}

// GetHookByToken returns the active hook holding a token, or
// world.ErrNotFound.
func (w *store) GetHookByToken(ctx context.Context, p *world.GetHookByTokenParams) (*world.Hook, error) {
	if p == nil || p.Token == "" {
		return nil, invalid("token required")
	}
	var h *storedHook
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		h, err = getHookByToken(tx, p.Token)
		return err
	})
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: no active hook holds the token", world.ErrNotFound)
	}
	return &h.Hook, nil
}

// ListHooks lists active hooks in creation order: all of them by creation
// time, or one run's by the sequence number of their hook_created events.
func (w *store) ListHooks(ctx context.Context, p *world.ListHooksParams) (*world.Page[world.Hook], error) {
	if p == nil {
		p = &world.ListHooksParams{}
	}
	l := listing{kind: "hooks", bucket: bHooksByTime, prefix: newKey(), desc: p.Descending, page: p.Pagination}
	if p.RunID != "" {
		l.kind, l.bucket, l.prefix = "hooks:"+p.RunID, bHooksByRun, newKey().str(p.RunID)
	}
	var page *world.Page[world.Hook]
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		page, err = scanPage(tx, l, func(suffix, _ []byte) (world.Hook, bool, error) {
			_, id, ok := readU64(suffix)
			if !ok {
				return world.Hook{}, false, nil
			}
			h, err := getHook(tx, string(id))
			if err != nil || h == nil {
				return world.Hook{}, false, err
			}
			return h.Hook, true, nil
		})
		return err
	})
	return page, err
}

func hookKey(id string) []byte { return newKey().raw(id) }

func tokenKey(token string) []byte { return newKey().raw(token) }

func hooksByTimeKey(h *storedHook) []byte { return newKey().time(h.CreatedAt).raw(h.HookID) }

func hooksByRunKey(h *storedHook) []byte { return newKey().str(h.RunID).seq(h.Seq).raw(h.HookID) }

func getHook(tx kvTx, id string) (*storedHook, error) {
	if id == "" {
		return nil, nil
	}
	return getJSON[storedHook](tx, bHooks, hookKey(id))
}

func getHookByToken(tx kvTx, token string) (*storedHook, error) {
	if token == "" {
		return nil, nil
	}
	id, err := tx.get(bHookTokens, tokenKey(token))
	if id == nil || err != nil {
		return nil, err
	}
	return getHook(tx, string(id))
}

func putHook(tx kvTx, h *storedHook) error {
	b, err := encode(h)
	if err != nil {
		return err
	}
	if err := tx.put(bHooks, hookKey(h.HookID), b); err != nil {
		return err
	}
	if err := tx.put(bHookTokens, tokenKey(h.Token), []byte(h.HookID)); err != nil {
		return err
	}
	if err := tx.put(bHooksByTime, hooksByTimeKey(h), nil); err != nil {
		return err
	}
	return tx.put(bHooksByRun, hooksByRunKey(h), nil)
}

// deleteHook disposes of a hook: the record, its indexes and its token.
func deleteHook(tx kvTx, h *storedHook) error {
	if err := tx.del(bHooks, hookKey(h.HookID)); err != nil {
		return err
	}
	id, err := tx.get(bHookTokens, tokenKey(h.Token))
	if err != nil {
		return err
	}
	if string(id) == h.HookID {
		if err := tx.del(bHookTokens, tokenKey(h.Token)); err != nil {
			return err
		}
	}
	if err := tx.del(bHooksByTime, hooksByTimeKey(h)); err != nil {
		return err
	}
	return tx.del(bHooksByRun, hooksByRunKey(h))
}

func getWait(tx kvTx, runID, waitID string) (*world.Wait, error) {
	if waitID == "" {
		return nil, nil
	}
	return getJSON[world.Wait](tx, bWaits, waitKey(runID, waitID))
}
