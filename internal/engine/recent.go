package engine

// Recent appends: the events this process's background executors appended
// to a run (a group's starts and outcomes), kept until the run's session
// in this process loads past them. A session that reads what is new
// (loadNew) learns from its first page how far the log goes, and takes
// the events between what it holds and that page from here when every
// one of them is here, rather than read them back and decode them. In a
// wide fan-out most steps run in background groups while the run's
// session runs: each step's start and outcome were read back once more.
// The events are those the World returned for its Appends, which a
// session's own commits take into its log in the same way (applyEvents).

import (
	"sync"

	"github.com/skeinflow/skein/world"
)

// Bounds of what recentAppends keeps: a run's events no session here
// loads (its run goes on in another process) are dropped with the run's
// whole set once the bytes or the runs are over these.
const (
	recentMaxBytes = 8 << 20
	recentMaxRuns  = 256
)

// recentAppends keeps recent appends by run and sequence number.
type recentAppends struct {
	mu    sync.Mutex
	bytes int
	runs  map[string]*recentRun
	order []string // runs, first noted first (dropped first)
}

type recentRun struct {
	events map[int64]world.Event
	bytes  int
}

func newRecentAppends() *recentAppends {
	return &recentAppends{runs: map[string]*recentRun{}}
}

// note keeps the events an Append to run committed (res).
func (ra *recentAppends) note(runID string, res *world.AppendResult) {
	if ra == nil || res == nil {
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	rr := ra.runs[runID]
	if rr == nil {
		rr = &recentRun{events: map[int64]world.Event{}}
		ra.runs[runID] = rr
		ra.order = append(ra.order, runID)
	}
	for _, r := range res.Results {
		if r.Event == nil {
			continue
		}
		if _, ok := rr.events[r.Event.Seq]; ok {
			continue
		}
		rr.events[r.Event.Seq] = *r.Event
		n := eventBytes(r.Event)
		rr.bytes += n
		ra.bytes += n
	}
	for (ra.bytes > recentMaxBytes || len(ra.runs) > recentMaxRuns) && len(ra.order) > 0 {
		ra.dropRun(ra.order[0])
	}
}

// between returns the events of run with sequence numbers after after and
// before before, newest first, when it keeps every one of them; nil
// otherwise.
func (ra *recentAppends) between(runID string, after, before int64) []world.Event {
	if ra == nil || before-after <= 1 {
		return nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	rr := ra.runs[runID]
	if rr == nil || int64(len(rr.events)) < before-after-1 {
		return nil
	}
	out := make([]world.Event, 0, before-after-1)
	for seq := before - 1; seq > after; seq-- {
		ev, ok := rr.events[seq]
		if !ok {
			return nil
		}
		out = append(out, ev)
	}
	return out
}

// holds reports whether it keeps event seq of run.
func (ra *recentAppends) holds(runID string, seq int64) bool {
	if ra == nil {
		return false
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	rr := ra.runs[runID]
	if rr == nil {
		return false
	}
	_, ok := rr.events[seq]
	return ok
}

// loaded drops the events of run up to seq, which its session holds now.
func (ra *recentAppends) loaded(runID string, seq int64) {
	if ra == nil {
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	rr := ra.runs[runID]
	if rr == nil {
		return
	}
	for s, ev := range rr.events {
		if s <= seq {
			n := eventBytes(&ev)
			rr.bytes -= n
			ra.bytes -= n
			delete(rr.events, s)
		}
	}
	if len(rr.events) == 0 {
		ra.dropRun(runID)
	}
}

// dropRun forgets run's events; ra.mu is held.
func (ra *recentAppends) dropRun(runID string) {
	if rr := ra.runs[runID]; rr != nil {
		ra.bytes -= rr.bytes
		delete(ra.runs, runID)
	}
	for i, id := range ra.order {
		if id == runID {
			ra.order = append(ra.order[:i], ra.order[i+1:]...)
			break
		}
	}
}
