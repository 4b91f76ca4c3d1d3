package sdk

import (
	"context"
	"time"

	"github.com/skeinflow/skein/internal/schedmsg"
)

// scheduler fires a Worker's schedules: one goroutine, looking at the
// clock (the Worker's, knobs.WithNow) at least every tick, so that a test clock that
// jumps or runs fast is followed within a tick.
type scheduler struct {
	w    *Worker
	list []*compiledSchedule
	next []time.Time
	tick time.Duration
}

func (w *Worker) runSchedules(ctx context.Context) {
	s := &scheduler{w: w, list: w.schedules, next: make([]time.Time, len(w.schedules)), tick: w.scheduleTick}
	now := w.now()
	for i, cs := range s.list {
		if t, ok := missed(cs, now); ok {
			w.cfg.Logger.Info("workflow: schedule catching up on a missed firing", "schedule", cs.Name, "scheduledTime", t)
			if !s.fire(ctx, cs, t) {
				s.next[i] = t // retried at the next look
				continue
			}
		}
		s.next[i] = cs.expr.Next(now)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(s.due(ctx))
	}
}

// due fires the schedules whose time has come and returns how long to wait
// before looking again.
func (s *scheduler) due(ctx context.Context) time.Duration {
	now := s.w.now()
	wait := s.tick
	for i, cs := range s.list {
		if !s.next[i].After(now) {
			// The latest firing that has come: a worker that was stalled
			// (or a clock that jumped) skips the ones before it.
			t, skipped := s.next[i], 0
			for n := cs.expr.Next(t); !n.After(now); n = cs.expr.Next(n) {
				t, skipped = n, skipped+1
			}
			if skipped > 0 {
				s.w.cfg.Logger.Warn("workflow: schedule skipped firings it was late for", "schedule", cs.Name, "skipped", skipped, "scheduledTime", t)
			}
			if !s.fire(ctx, cs, t) {
				s.next[i] = t // tried again at the next look, a tick from now
				continue
			}
			s.next[i] = cs.expr.Next(t)
		}
		wait = min(wait, s.next[i].Sub(now))
	}
	return max(wait, time.Millisecond)
}

// fire starts the run of one firing and reports whether it did (or found
// it started); an error is logged and the firing tried again.
func (s *scheduler) fire(ctx context.Context, cs *compiledSchedule, t time.Time) bool {
	f := schedmsg.Firing{Name: cs.Name, Time: t.UTC(), Workflow: cs.Workflow, Input: cs.input}
	runID, existed, err := s.w.p.client.startFiring(ctx, f)
	log := s.w.cfg.Logger.With("schedule", cs.Name, "scheduledTime", f.Time, "workflow", cs.Workflow)
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		log.Error("workflow: schedule could not start its run; retrying", "err", err)
		return false
	case existed:
		log.Debug("workflow: schedule firing already started", "run", runID)
	default:
		log.Info("workflow: schedule started a run", "run", runID)
	}
	return true
}

// missed returns the latest firing of cs in (now-CatchUp, now], if any.
func missed(cs *compiledSchedule, now time.Time) (time.Time, bool) {
	if cs.CatchUp <= 0 {
		return time.Time{}, false
	}
	var last time.Time
	for t := cs.expr.Next(now.Add(-cs.CatchUp)); !t.IsZero() && !t.After(now); t = cs.expr.Next(t) {
		last = t
	}
	return last, !last.IsZero()
}
