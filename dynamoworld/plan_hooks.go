package dynamoworld

import (
	"strings"

	"github.com/skeinflow/skein/world"
)

// planHooks writes a commit's hook changes, in event order: a hook is three
// items (the global item by hook ID, the run's link, the token's claim),
// which change together; mergeOps folds repeated changes of one item. A
// new hook's items are puts on their absence, its token's also on a stale
// holder the Append found (tokenInfo); a hook_conflict checks that the
// holder it names still holds the token (and, when the hook ID was not
// known, that it is free).
func planHooks(pl *plan, tok *tokenInfo) []*op {
	var ops []*op
	created := map[string]bool{}
	for _, a := range pl.hookActs {
		switch a.kind {
		case actCreate:
			h := a.hook
			created[h.HookID] = true
			tokenCond := notExists
			if tok != nil {
				if stale, ok := tok.stale[h.Token]; ok {
					tokenCond = func(e *expr) string { return e.notExists() + " OR " + e.n(aHookID) + " = " + e.v(str(stale)) }
				}
			}
			ops = append(ops,
				putOp(encodeHook(hookKey(h.HookID), h, true), tagHookGlobal, h.HookID, notExists),
				putOp(encodeHook(hookLinkKey(pl.runID, h.HookID), h, false), tagOther, "", notExists),
				putOp(encodeToken(h), tagToken, h.Token, tokenCond))
		case actConflict:
			if a.assumed {
				ops = append(ops, checkOp(hookKey(a.id), tagHookGlobal, a.id, notExists))
			}
			if !created[a.holder.HookID] {
				holder := a.holder.HookID
				ops = append(ops, checkOp(tokenKey(a.token), tagHolder, a.token, func(e *expr) string {
					return e.n(aHookID) + " = " + e.v(str(holder))
				}))
			}
		case actDispose:
			ops = append(ops, hookDeletes(pl.runID, a.hook)...)
		}
	}
	return ops
}

// runEndDeletes deletes the hooks and waits of an ending run that a query
// found and the commit does not already delete.
func runEndDeletes(pl *plan, ends *runEndItems) []*op {
	var ops []*op
	for _, h := range ends.hooks {
		if _, ok := pl.hooks[h.HookID]; !ok {
			ops = append(ops, hookDeletes(pl.runID, h)...)
		}
	}
	for _, id := range ends.waits {
		if _, ok := pl.waits[id]; !ok {
			ops = append(ops, deleteOp(waitKey(pl.runID, id), nil))
		}
	}
	return ops
}

// hookDeletes disposes of a hook: its global item, its run link and its
// token item (if the token is still the hook's).
func hookDeletes(runID string, h *world.Hook) []*op {
	hid := h.HookID
	return []*op{
		deleteOp(hookKey(hid), nil),
		deleteOp(hookLinkKey(runID, hid), nil),
		deleteOp(tokenKey(h.Token), func(e *expr) string {
			return e.notExists() + " OR " + e.n(aHookID) + " = " + e.v(str(hid))
		}),
	}
}

// isCleanup reports whether a key is one a run's end deletes: a hook's
// items or a wait.
func isCleanup(k itemKey) bool {
	return k.sk == skHook || k.sk == skToken || strings.HasPrefix(k.sk, prefHook) || strings.HasPrefix(k.sk, prefWait)
}
