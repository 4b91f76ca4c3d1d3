package dynamoworld

import (
	"fmt"
	"maps"
	"slices"

	"github.com/skeinflow/skein/world"
)

// Priming (see doc.go): a ListEvents that reads a run's whole log caches
// the run folded from it, as complete as a snapshot of a World that made
// every commit itself. Nothing of the read is trusted but each commit item:
// the commits must chain from the first, the fold must record every event
// again as it was, and the head read after them must agree with it.

// primeFromLog caches a snapshot of runID built from commits (all of the
// run's, ascending), their events evs, and the head read after them.
func (w *store) primeFromLog(runID string, commits []item, evs [][]world.Event, head item) {
	if w.cache.max <= 0 || head == nil || len(commits) == 0 || len(commits) != len(evs) {
		return
	}
	last := getN(commits[len(commits)-1], aLastSeq)
	if old := w.cache.get(runID); old != nil && old.run != nil && (old.run.LastSeq > last || old.run.LastSeq == last && old.complete) {
		return
	}
	snap, err := foldLog(runID, commits, evs)
	if err != nil {
		w.logger.Debug("dynamoworld: run log not cached", "run", runID, "err", err)
		return
	}
	r := snap.run
	if string(r.Status) != getS(head, aStatus) || !r.CreatedAt.Equal(getT(head, aCreated)) {
		return // the head moved on since the commits were read (or is not yet written)
	}
	snap.streams = headStreams(head)
	if snap.mayBare = decodeMayBare(head); len(snap.bare) > 0 && !snap.mayBare {
		return // bare steps in a run whose head does not allow them
	}
	w.cache.putPrimed(runID, snap)
}

// rollForward brings the run's cached snapshot, when complete, up to date
// with a read of the log back from its end (commits newest first, their
// events in order) that reached the snapshot's own last sequence number:
// it folds the commits made since (by other processes) onto it. The
// snapshot was the run's state as of its LastSeq, and the commits since
// are immutable and must chain from it to the newest read, so the result
// is the state as of the newest, as complete as the snapshot was.
func (w *store) rollForward(runID string, commits []item, evs [][]world.Event) {
	old := w.cache.get(runID)
	if old == nil || old.run == nil || !old.complete || old.stepIDs == nil || len(commits) == 0 || len(commits) != len(evs) {
		return
	}
	from := old.run.LastSeq
	k := -1 // the commit keyed by the snapshot's last sequence number
	for i, it := range commits {
		prev, ok := prevFromSK(getS(it, attrSK))
		if !ok || prev < from {
			break
		}
		if prev == from {
			k = i
			break
		}
	}
	if k < 0 {
		return // nothing new, or the read stopped short of it
	}
	snap := old.clone()
	snap.blind = false
	next := from
	for i := k; i >= 0; i-- {
		it := commits[i]
		prev, _ := prevFromSK(getS(it, attrSK))
		if prev != next || getN(it, aLastSeq) != prev+getN(it, aCount) || int64(len(evs[i])) != getN(it, aCount) {
			return
		}
		next = getN(it, aLastSeq)
		for _, ev := range evs[i] {
			if err := snap.fold(ev); err != nil {
				w.logger.Debug("dynamoworld: run log not rolled forward", "run", runID, "err", err)
				return
			}
		}
		snap.trackBare(it, evs[i])
	}
	snap.lazy = decodeLazy(commits[0])
	for id, p := range snap.lazy {
		if snap.steps[id] == nil {
			return
		}
		if _, ok := old.lazy[id]; !ok && p < from {
			delete(snap.lazy, id) // listed since before the snapshot, which knows its item (a renewal wrote it)
		}
	}
	snap.nHooks, snap.nWaits = live(snap.hooks), live(snap.waits)
	snap.nSteps = decodeStepCount(commits[0])
	w.cache.putPrimed(runID, snap)
}

// merge takes into a snapshot folded from the log what old, an incomplete
// snapshot of the run at the same sequence number, knows better: the steps
// it read or committed (a lease renewal it saw, or made, changed them
// without an event), the lazy steps without an item (a renewal may have
// written one), and what it knows of the run's streams.
func (s *snapshot) merge(old *snapshot) {
	for id, st := range old.steps {
		s.steps[id] = st
	}
	s.lazy = maps.Clone(old.lazy)
	if s.lazy == nil {
		s.lazy = map[string]int64{}
	}
	if old.streams == streamsSome {
		s.streams = streamsSome
	}
	s.endChecked = s.endChecked || old.endChecked
}

// foldLog folds a run's whole log into a complete snapshot (see Priming).
func foldLog(runID string, commits []item, evs [][]world.Event) (*snapshot, error) {
	snap := newSnapshot(nil)
	snap.complete, snap.stepIDs = true, newIDSet()
	next := int64(0) // the key the next commit must have
	for i, it := range commits {
		prev, ok := prevFromSK(getS(it, attrSK))
		if !ok || prev != next || getN(it, aLastSeq) != prev+getN(it, aCount) || int64(len(evs[i])) != getN(it, aCount) {
			return nil, fmt.Errorf("commit %s does not follow sequence %d", getS(it, attrSK), next)
		}
		next = getN(it, aLastSeq)
		for _, ev := range evs[i] {
			if err := snap.fold(ev); err != nil {
				return nil, err
			}
		}
		snap.trackBare(it, evs[i])
	}
	if snap.run == nil {
		return nil, fmt.Errorf("no run_created")
	}
	snap.lazy = decodeLazy(commits[len(commits)-1])
	for id := range snap.bare {
		if st := snap.steps[id]; st == nil || !endsBare(st) {
			return nil, fmt.Errorf("bare step %s is not ended", id)
		}
	}
	snap.nHooks, snap.nWaits, snap.nSteps = live(snap.hooks), live(snap.waits), live(snap.steps)
	for id := range snap.lazy {
		if snap.steps[id] == nil {
			return nil, fmt.Errorf("lazy step %s is not in the log", id)
		}
	}
	return snap, nil
}

// fold applies one recorded event to the snapshot with world.Apply, at the
// time it was recorded, and checks that the state machine records it
// again as it was.
func (s *snapshot) fold(ev world.Event) error {
	st := world.State{Run: s.run}
	corr, data := ev.CorrelationID, ev.Data
	switch d := ev.Data.(type) {
	case *world.WaitCreated, *world.WaitCompleted:
		st.Wait = s.waits[corr]
	case *world.HookCreated, *world.HookReceived, *world.HookDisposed:
		st.Hook = s.hooks[corr]
	case *world.HookConflict:
		// Recorded for a hook_created whose token another run's hook held.
		data = &world.HookCreated{Token: d.Token}
		st.TokenHolder = &world.Hook{RunID: d.ConflictingRunID, Token: d.Token}
	default:
		if world.IsStepEvent(ev.Type()) {
			st.Step = s.steps[corr]
			s.stepIDs.add(corr)
		}
	}
	eff, err := world.Apply(st, world.Event{RunID: ev.RunID, EventID: ev.EventID, CorrelationID: corr, Data: data}, ev.CreatedAt)
	switch {
	case err != nil:
		return fmt.Errorf("event %d (%s) does not replay: %w", ev.Seq, ev.Type(), err)
	case eff.Skip || eff.Event.Seq != ev.Seq || eff.Event.Type() != ev.Type():
		return fmt.Errorf("event %d (%s) replays differently", ev.Seq, ev.Type())
	}
	s.run = eff.Run
	if eff.Step != nil {
		s.steps[corr] = eff.Step
	}
	if eff.Wait != nil {
		s.waits[corr] = eff.Wait
	}
	if eff.Hook != nil {
		s.hooks[corr] = eff.Hook
	}
	if eff.DeleteHookID != "" {
		s.hooks[eff.DeleteHookID] = nil
	}
	if eff.EndsRun {
		clear(s.hooks)
		clear(s.waits)
	}
	return nil
}

// trackBare follows, commit by commit, which steps are bare (bare.go): those
// a commit lists in bd, until a later commit changes them (and writes
// their item).
func (s *snapshot) trackBare(it item, evs []world.Event) {
	made := decodeBareMade(it)
	for _, ev := range evs {
		if world.IsStepEvent(ev.Type()) && !slices.Contains(made, ev.CorrelationID) {
			delete(s.bare, ev.CorrelationID)
		}
	}
	for _, id := range made {
		s.bare[id] = struct{}{}
	}
}
