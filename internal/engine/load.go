package engine

// Loading and priming a session: reading the run's log (all of it on a
// cold start, what is new afterwards), tracking the run's status, and
// rebuilding the workflow by replaying the in-memory log.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/skeinflow/skein/world"
)

// resume goes on with a session that ended and took the lease again: it
// loads what was appended since it last looked and feeds it to its
// workflow, or replays its in-memory log into a new coroutine (prime).
func (s *session) resume(ctx context.Context) error {
	if _, err := s.loadNew(ctx, false); err != nil {
		return err
	}
	if err := s.keyless(); err != nil {
		return err
	}
	if s.runStatus.Terminal() {
		return s.endAndRest(ctx)
	}
	s.prime()
	return s.loop(ctx)
}

// keyless refuses a sealed run whose payloads this engine's World does not
// open (no encryption configured): its workflow must never run on the
// envelopes. The error matches world.ErrKeyUnavailable, so the message
// waits for an executor with the key (refuseKey).
func (s *session) keyless() error {
	return sealedWithoutKey(s.runID, s.meta.input, s.meta.execCtx)
}

// runState is what a session knows of its run: the committed log as it
// loaded and committed it, and what track derived from it.
type runState struct {
	log       eventLog
	lastSeq   int64
	runStatus world.RunStatus
	meta      runMeta
	hold      *holdState // the run's hold, while it is held
	// deactivated: the log holds run_deactivated (rest.go).
	deactivated bool
}

// run starts a session: it loads the log (what was appended since the
// cached part, see logcache.go) and primes the workflow, the one kept
// from the run's last session (kept, see sticky.go) or a replay.
func (s *session) run(ctx context.Context, kept *sticky) error {
	defer func() { kept.stop() }() // unless adopted (then nil)
	if _, err := s.loadNew(ctx, false); err != nil {
		return err
	}
	if s.log.len() == 0 {
		return &PermanentError{Reason: "run " + s.runID + " not found"}
	}
	if err := s.keyless(); err != nil {
		return err
	}
	s.beginSpan(ctx, s.e.spans, s.runID, s.meta)
	if s.runStatus.Terminal() {
		return s.endAndRest(ctx)
	}
	wf, ok := s.e.reg.Workflow(s.meta.workflowName)
	if !ok {
		return s.failUnregistered(ctx)
	}
	s.wf = wf
	s.adopt(kept)
	kept = nil
	s.prime()
	s.readStepLeases(ctx)
	return s.loop(ctx)
}

// close stops the coroutine and any step still running.
func (s *session) close() {
	if s.r != nil {
		s.r.stop()
	}
	s.stopInflight(false)
}

// track updates what is known of the run from a committed event (a
// session's state, or CheckLog's).
func (st *runState) track(ev *world.Event) {
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		st.runStatus = world.RunStatusPending
		st.meta = runMeta{runID: ev.RunID, workflowName: d.WorkflowName, input: d.Input, execCtx: d.ExecutionContext, createdAt: ev.CreatedAt}
	case *world.RunStarted:
		st.runStatus = world.RunStatusRunning
		st.hold = nil
	case *world.RunDeactivated:
		st.deactivated = true
	case *world.RunHeld:
		st.runStatus = world.RunStatusHeld
		st.hold = &holdState{attempt: d.Attempt, code: d.ErrorCode, retryAt: d.RetryAt}
		if d.Error != nil {
			st.hold.message = d.Error.Message
		}
	case *world.RunCompleted:
		st.runStatus = world.RunStatusCompleted
	case *world.RunFailed:
		st.runStatus = world.RunStatusFailed
	case *world.RunCancelled:
		st.runStatus = world.RunStatusCancelled
	}
}

// loadNew reads the events appended since the session's last known one,
// optionally applying them to the replayer (allowed only with nothing
// uncommitted). The cold start reads forward, page by page; later loads read
// newest first back to the last known sequence number, so they cost what
// was appended since, however long the log; past the first page, the
// events this process's background executors appended are taken as they
// were appended, when all that is left is (recent.go): when the next
// event is there, the first page is the newest event alone.
func (s *session) loadNew(ctx context.Context, consume bool) (int, error) {
	if s.log.len() == 0 {
		return s.loadForward(ctx, consume)
	}
	const firstPage = 4 // mostly one or two new events: a hook payload, a step's outcome
	var fresh []world.Event
	cursor, limit := "", firstPage
	if s.e.recent.holds(s.runID, s.lastSeq+1) {
		// Most likely all that is new was appended here: the newest event
		// alone tells how far the log goes, and the rest is taken here.
		limit = 1
	}
	for {
		page, err := s.e.w.ListEvents(ctx, &world.ListEventsParams{
			RunID: s.runID, Pagination: world.Pagination{Cursor: cursor, Limit: limit, Descending: true},
		})
		if err != nil {
			return 0, err
		}
		reached := false
		for _, ev := range page.Items {
			if ev.Seq <= s.lastSeq {
				reached = true
				break
			}
			fresh = append(fresh, ev)
		}
		if reached || !page.HasMore || len(page.Items) == 0 || fresh[len(fresh)-1].Seq == s.lastSeq+1 {
			break // nothing is left between lastSeq and the oldest read
		}
		if rest := s.e.recent.between(s.runID, s.lastSeq, fresh[len(fresh)-1].Seq); rest != nil {
			fresh = append(fresh, rest...) // appended here: see recent.go
			break
		}
		next := nextPage(fresh[0].Seq, s.lastSeq, len(fresh))
		if limit == 1 && len(fresh) == 1 {
			next = min(next, firstPage-1) // not all here: read on as the usual first page
		}
		cursor, limit = page.Cursor, next
	}
	slices.Reverse(fresh)
	for i := range fresh {
		s.add(fresh[i], consume)
	}
	s.e.recent.loaded(s.runID, s.lastSeq)
	return len(fresh), nil
}

// nextPage is the size of the next page of a newest-first read back to
// lastSeq that has read got events down from newest: a run's sequence
// numbers have no gaps, so what is left is newest-lastSeq-got, and one
// more, event lastSeq itself, which tells the read it has reached what the
// session holds (without it, a last page of one event follows); at most a
// World's page. A page of MaxPageLimit read back a few events and decoded
// up to a thousand the session holds already, after every refused commit
// of a busy fan-out.
func nextPage(newest, lastSeq int64, got int) int {
	return int(min(max(newest-lastSeq-int64(got), 0)+1, world.MaxPageLimit))
}

func (s *session) loadForward(ctx context.Context, consume bool) (int, error) {
	n := 0
	cursor := ""
	for {
		page, err := s.e.w.ListEvents(ctx, &world.ListEventsParams{
			RunID: s.runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit},
		})
		if err != nil {
			if errors.Is(err, world.ErrNotFound) && n == 0 {
				return 0, nil
			}
			return n, err
		}
		for _, ev := range page.Items {
			if ev.Seq > s.lastSeq {
				s.add(ev, consume)
				n++
			}
		}
		if page.Cursor != "" {
			cursor = page.Cursor
		}
		if !page.HasMore || len(page.Items) == 0 {
			return n, nil
		}
	}
}

// add appends a loaded event to the in-memory log.
func (s *session) add(ev world.Event, consume bool) {
	last := s.log.add(ev)
	s.lastSeq = ev.Seq
	s.track(last)
	if consume {
		s.r.noteAuthored(last)
		s.r.consume(last)
	}
}

// rebuild discards the coroutine and replays the in-memory log into a new
// one, then delivers the held (uncommitted) step outcomes again.
func (s *session) rebuild() {
	var said []uint64
	if s.r != nil {
		s.r.stop()
		said = s.r.said
	}
	s.r = newReplayer(s.wf, s.e.log)
	s.r.watch.Store(s.watch)
	s.r.said = said
	runID, e := s.runID, s.e
	s.r.guard.report = func(d *world.ErrorData) { e.failForeign(runID, d) }
	s.r.replay(s.log.each)
	s.applyStepLeases()
	held := s.held
	s.held, s.pending, s.split = nil, nil, false
	for _, o := range held {
		s.deliver(o)
	}
}

// refresh loads what other writers appended after a refused commit and
// takes it into the workflow: fed to it as it stands when that is what a
// replay would make of it (absorb), else by a rebuild.
func (s *session) refresh(ctx context.Context) error {
	n, err := s.loadNew(ctx, false)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("engine: run %s: commit refused but no new events", s.runID)
	}
	if s.absorb() {
		s.e.log.Debug("engine: commit refused; fed the workflow the new events", "run", s.runID, "newEvents", n, "held", len(s.held))
		return nil
	}
	s.e.log.Debug("engine: commit refused; rebuilding the workflow", "run", s.runID, "newEvents", n, "held", len(s.held))
	s.rebuild()
	return nil
}

// failUnregistered fails a run whose workflow this engine does not know.
func (s *session) failUnregistered(ctx context.Context) error {
	data := &world.ErrorData{Type: TypeNotRegistered, Message: fmt.Sprintf(workflowNotRegistedFmt, s.meta.workflowName)}
	for try := 0; try < 5; try++ {
		_, err := s.e.append(ctx, &world.AppendParams{RunID: s.runID, IfLastSeq: s.lastSeq, Events: []world.EventInput{
			{Data: &world.RunFailed{Error: data, ErrorCode: world.CodeRuntimeError}},
		}})
		if err == nil {
			s.e.log.Warn("engine: run failed: workflow not registered", "run", s.runID, "workflow", s.meta.workflowName)
			return s.endAndRest(ctx)
		}
		if !errors.Is(err, world.ErrConflict) {
			return err
		}
		if _, err := s.loadNew(ctx, false); err != nil {
			return err
		}
		if s.runStatus.Terminal() {
			return nil
		}
	}
	return fmt.Errorf("engine: run %s: could not record that its workflow is not registered", s.runID)
}
