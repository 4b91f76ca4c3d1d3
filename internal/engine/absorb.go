package engine

// Absorbing a refused commit: another writer (a background executor
// recording the steps of a wide fan-out, a webhook) appended to the run
// since the session last committed, so the session's fenced commit was
// refused. Rebuilding the workflow (replaying the whole log into a new
// coroutine) is always right, but costs the whole run: in a fan-out of
// 5,000 steps whose background executors commit all along, every refusal
// re-ran 5,000 Step.Go calls and 15,000 events. absorb feeds the new events
// to the workflow as it stands instead, when that is what the replay would
// make of the log.

import (
	"sort"

	"github.com/skeinflow/skein/world"
)

// absorb takes into the workflow the events the session loaded after its
// replay's last one (refresh), as a rebuild would, and reports whether it
// did; false leaves the replay for the caller to rebuild, whatever it has
// consumed meanwhile.
//
// With nothing uncommitted delivered to the workflow, the events are fed in
// as a kept workflow takes them in (prime): the same events a replay would
// consume after the same ones. With step outcomes held (delivered, not yet
// committed), the log will hold them after the new events, where the
// workflow has seen them before; absorb takes the new events only when the
// order makes no difference, that is when
//   - the held outcomes are all step outcomes (pending holds nothing else)
//     and the code has not run since the first was delivered: it has seen
//     none of them;
//   - the new events are step events (started, retrying, completed,
//     failed) of other steps than the held ones;
//   - after consuming them without waking the code, its condition does not
//     hold: the conditions the workflow waits on (Get, All, Any, Race,
//     Select) only ever go from false to true as futures settle, so none held
//     at any point of the log's order either, which a replay would have
//     woken the code at.
//
// The settlement order (Future.Order, which Race, Any, Select and All's
// choice of error read) is then put in the log's order (reorder).
func (s *session) absorb() bool {
	r := s.r
	if r == nil || r.co == nil || r.over() || r.guard.misuse.Load() != nil || s.split {
		return false
	}
	fresh, ok := s.log.after(r.lastSeq)
	if !ok || len(fresh) == 0 {
		return false
	}
	held, ok := s.heldOps()
	if !ok {
		return false
	}
	for _, ev := range fresh {
		if !stickyEvent(ev) || len(held) > 0 && (!stepEvent(ev) || held[ev.CorrelationID] != nil) {
			return false
		}
	}
	for _, ev := range fresh {
		r.noteAuthored(ev)
	}
	if len(held) == 0 {
		for _, ev := range fresh {
			r.consume(ev)
		}
		return true
	}
	before := r.settles
	r.quiet = true
	for _, ev := range fresh {
		r.consume(ev)
	}
	r.quiet = false
	if r.co == nil || r.co.ready() {
		return false
	}
	r.reorder(held, fresh, before)
	return true
}

// heldOps returns the steps of the held outcomes by ID; ok is false when
// pending holds other deliveries (a wait's end, a compensation's outcome)
// or the code has run since the first held outcome was delivered.
func (s *session) heldOps() (map[string]*op, bool) {
	if len(s.pending) != len(s.held) || len(s.held) > 0 && s.r.slices != s.heldSince {
		return nil, false
	}
	held := make(map[string]*op, len(s.held))
	for _, o := range s.held {
		op := s.r.byID[o.stepID]
		if o.comp || op == nil || op.kind != opStep {
			return nil, false
		}
		held[o.stepID] = op
	}
	return held, true
}

// stepEvent reports whether ev is one of a step's attempts or outcomes.
func stepEvent(ev *world.Event) bool {
	switch ev.Data.(type) {
	case *world.StepStarted, *world.StepRetrying, *world.StepCompleted, *world.StepFailed:
		return true
	}
	return false
}

// reorder puts the settlements of absorbed events (fresh, consumed after
// the replay's settlement count was before) ahead of those of the held
// outcomes, as the log orders them: the same order numbers, the absorbed
// ones first, each group in its own order.
func (r *replayer) reorder(held map[string]*op, fresh []*world.Event, before int64) {
	var absorbed, delivered []*op
	seen := make(map[*op]bool)
	for _, ev := range fresh {
		if o := r.byID[ev.CorrelationID]; o != nil && o.settled && o.order > before && !seen[o] {
			seen[o] = true
			absorbed = append(absorbed, o)
		}
	}
	if len(absorbed) == 0 {
		return
	}
	for _, o := range held {
		if o.settled {
			delivered = append(delivered, o)
		}
	}
	byOrder := func(ops []*op) {
		sort.Slice(ops, func(i, j int) bool { return ops[i].order < ops[j].order })
	}
	byOrder(absorbed)
	byOrder(delivered)
	all := append(append([]*op(nil), delivered...), absorbed...)
	orders := make([]int64, len(all))
	for i, o := range all {
		orders[i] = o.order
	}
	sort.Slice(orders, func(i, j int) bool { return orders[i] < orders[j] })
	for i, o := range append(absorbed, delivered...) {
		o.order = orders[i]
	}
}
