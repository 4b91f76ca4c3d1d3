package engine

// Sticky sessions: a run's workflow stays alive, suspended where its last
// session left it, between the run's continuations in this process, so
// that the next one feeds it only the events appended since instead of
// replaying the workflow from its start. Without it a webhook flood cost
// quadratically: the k-th delivery's session replayed the k-1 before it,
// decoding every payload again. The suspended workflow is kept with the
// run's log in the log cache (logcache.go, bounded in runs and bytes,
// least recently used out), which a session takes out while it runs.
//
// A kept workflow must never make a history a fresh replay would not, so
// it is kept only when its state is the replay of the log it consumed,
// nothing else (keepable), and goes on only when the log the next session
// holds extends exactly what it consumed with events that cannot
// contradict it (extends: a hook's payload, a background executor's step
// events, a client's attributes). Any doubt drops it and replays the log
// as before: another session committed creations or ended, held or
// cancelled the run (its events are none of those), a divergence or a
// misuse, a session that failed, the workflow registered anew, or state
// learned from the World rather than the log (a refused start, a step's
// current lease: tainted).

import "github.com/skeinflow/skein/world"

// sticky is a suspended workflow kept between sessions: its replayer
// (coroutine parked, retired: see apiGuard) and the workflow it runs.
type sticky struct {
	r  *replayer
	wf *Workflow
}

// stop ends the kept workflow's goroutine. Safe on nil.
func (l *sticky) stop() {
	if l != nil {
		l.r.stop()
	}
}

// adopt gives the session the workflow kept for its run (nil: none), to go
// on with if prime finds it fits; one of another workflow definition than
// the session's is stopped.
func (s *session) adopt(l *sticky) {
	if l == nil {
		return
	}
	if l.wf != s.wf || s.r != nil {
		l.stop()
		return
	}
	s.r = l.r
}

// prime readies the workflow for the log the session holds: it goes on
// with the workflow kept from before (adopt, or this session's own before
// it gave the lease back) when the log extends exactly what it consumed,
// feeding it only the new events; otherwise it replays the whole log into
// a new coroutine (rebuild).
func (s *session) prime() {
	if s.r == nil {
		s.rebuild()
		return
	}
	fresh, ok := s.extends()
	if !ok {
		s.rebuild()
		return
	}
	r := s.r
	r.watch.Store(s.watch)
	r.guard.live.Store(true)
	// As replay does: note every new event, then consume them.
	for _, ev := range fresh {
		r.noteAuthored(ev)
	}
	for _, ev := range fresh {
		r.consume(ev)
	}
	s.applyStepLeases()
}

// extends reports whether the session's kept workflow may go on with the
// log the session holds, and returns the events it has not consumed.
func (s *session) extends() ([]*world.Event, bool) {
	r := s.r
	if r.co == nil || r.over() || r.tainted || r.guard.misuse.Load() != nil || r.meta.runID != s.runID ||
		r.wf != s.wf || len(s.held) > 0 || len(s.pending) > 0 {
		return nil, false
	}
	fresh, ok := s.log.after(r.lastSeq)
	if !ok {
		return nil, false
	}
	for _, ev := range fresh {
		if !stickyEvent(ev) {
			return nil, false
		}
	}
	return fresh, true
}

// stickyEvent reports whether a kept workflow may take ev in as a replay
// would: an event no session writes for the code's operations, nor one
// that ends, holds or fails the run.
func stickyEvent(ev *world.Event) bool {
	switch ev.Data.(type) {
	case *world.HookReceived, *world.StepStarted, *world.StepRetrying, *world.StepCompleted, *world.StepFailed:
		return true
	case *world.AttributeSet:
		return ev.CorrelationID == "" // a client's
	}
	return false
}

// park readies the session's workflow to outlive the lease: the steps
// still running (none when the session ended well) are stopped, and the
// replayer is retired, so that a goroutine the workflow started fails the
// run itself should it misuse the API meanwhile.
func (s *session) park() {
	s.stopInflight(false)
	if s.r != nil {
		s.r.retire()
	}
}

// keep returns the workflow to keep for the run's next session, nil when
// it must not be kept (it is then stopped, with the session's steps):
// kept only when the session ended well (ok), is not abandoned, holds
// nothing uncommitted, and its workflow is alive, waiting, and the replay
// of the log the session holds (keepable).
func (s *session) keep(ok bool) *sticky {
	if !ok || s.watch.abandoned.Load() || !s.keepable() {
		s.close()
		return nil
	}
	s.park()
	l := &sticky{r: s.r, wf: s.wf}
	s.r = nil
	return l
}

func (s *session) keepable() bool {
	r := s.r
	return r != nil && s.wf != nil && r.co != nil && !r.over() && !r.tainted && r.guard.misuse.Load() == nil &&
		len(s.pending) == 0 && len(s.held) == 0 && len(s.late) == 0 && len(s.running) == 0 &&
		!s.runStatus.Terminal() && s.runStatus != world.RunStatusHeld && r.lastSeq <= s.lastSeq
}

// after returns the events after seq, in log order, and whether the log
// holds the event seq itself (or seq is 0 and the log starts the run):
// whoever consumed up to seq consumed exactly the log's prefix. It walks
// from the end, so it costs what follows seq.
func (l *eventLog) after(seq int64) ([]*world.Event, bool) {
	var out []*world.Event
	for c := len(l.chunks) - 1; c >= 0; c-- {
		chunk := l.chunks[c]
		for i := len(chunk) - 1; i >= 0; i-- {
			ev := &chunk[i]
			switch {
			case ev.Seq == seq:
				return reversed(out), true
			case ev.Seq < seq:
				return nil, false
			}
			out = append(out, ev)
		}
	}
	return nil, false
}

func reversed(evs []*world.Event) []*world.Event {
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs
}
