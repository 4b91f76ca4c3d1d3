package dynamoworld

import (
	"fmt"

	"github.com/skeinflow/skein/world"
)

// Priming. A ListEvents that reads a run's log from its first commit to its
// end (the engine's cold start does, before its first Append) has read
// every commit of the run, and the run's head right after them, in one
// strongly consistent Query. Commit items are never changed once written,
// and every change to a run's entities is an event of one of them, judged
// by world.Apply on the state the commits before it left. So folding the
// events with world.Apply, each at its own time, gives the run's state as
// of the newest commit read: the run, every step, wait and active hook,
// every step ID. The World caches that as a snapshot as complete as one it
// holds after making every commit itself (snapshot.complete and stepIDs),
// so that the engine's next Append needs no read (and creates its step
// lazily), and the run's end needs no query for hooks and waits.
//
// A Query is not a consistent snapshot of the items it reads (read
// committed), so nothing is assumed of the read beyond each item:
//
//   - the commits must form a chain from the first: keyed 0, then each by
//     the last sequence number of the one before, holding n events each; a
//     commit missing from the read (one landing while it ran) breaks it;
//   - the fold must accept every event as it was recorded (same type, same
//     sequence number);
//   - the head must be there and agree with the fold (status, creation
//     time), or the run is being created, or has moved on meanwhile.
//
// Commits landed after those read do not make the snapshot wrong, only
// old: it is the state as of its LastSeq, and the fence of the next commit
// is that LastSeq, as for any cached snapshot. The one change without an
// event, a step lease renewal, is guarded by its own conditions (doc.go,
// Commits), as for any cached snapshot. A snapshot the cache already holds
// at the same or a later sequence number is kept.

// primeFromLog caches a snapshot of runID built from commits (all of the
// run's, ascending), their events evs, and the head read after them.
func (w *World) primeFromLog(runID string, commits []item, evs [][]world.Event, head item) {
	if w.cache.max <= 0 || head == nil || len(commits) == 0 || len(commits) != len(evs) {
		return
	}
	if old := w.cache.get(runID); old != nil && old.run != nil && lastSeqOf(old.run) >= getN(commits[len(commits)-1], aLastSeq) {
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
	w.cache.putIfNewer(runID, snap)
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
	}
	if snap.run == nil {
		return nil, fmt.Errorf("no run_created")
	}
	snap.lazy = decodeLazy(commits[len(commits)-1])
	snap.counted, snap.nHooks, snap.nWaits = true, live(snap.hooks), live(snap.waits)
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
	case *world.StepCreated, *world.StepStarted, *world.StepCompleted, *world.StepFailed, *world.StepRetrying:
		st.Step = s.steps[corr]
		s.stepIDs.add(corr)
	case *world.WaitCreated, *world.WaitCompleted:
		st.Wait = s.waits[corr]
	case *world.HookCreated, *world.HookReceived, *world.HookDisposed:
		st.Hook = s.hooks[corr]
	case *world.HookConflict:
		// Recorded for a hook_created whose token another run's hook held.
		data = &world.HookCreated{Token: d.Token}
		st.TokenHolder = &world.Hook{RunID: d.ConflictingRunID, Token: d.Token}
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
