package engine

// One-shot hooks. The hook on which a parent run receives a child run's
// outcome takes one payload: once it is recorded, the hook has nothing
// left to do, and left active it would still be listed among the run's
// hooks (and drawn as waiting) until the parent ends. DisposeOnReceipt
// marks such a hook; the replayer asks for its disposal when it applies
// the payload's hook_received, exactly as if the code had called Dispose
// right then, so the hook_disposed is committed at the workflow's next
// suspension. The decision follows the log (the hook_received), so replay
// makes it again at the same point. A log recorded before one-shot hooks
// has no hook_disposed after the payload: its replay is unaffected (a
// hook_disposed is never matched against the code), and the session that
// next commits for the run records the missing disposal.

// DisposeOnReceipt makes the hook dispose itself once it has received a
// payload (at once if it has one already).
func (h *Hook) DisposeOnReceipt() {
	h.r.enter("Hook.DisposeOnReceipt")
	h.o.oneShot = true
	h.r.disposeReceived(h.o)
}

// disposeReceived asks for the disposal of o if it is a one-shot hook that
// has its payload and is not disposed yet.
func (r *replayer) disposeReceived(o *op) {
	if !o.oneShot || len(o.payloads) == 0 || o.disposeWanted {
		return
	}
	o.disposeWanted = true
	o.disposeAt = len(r.ops)
	r.disposals = append(r.disposals, o)
}
