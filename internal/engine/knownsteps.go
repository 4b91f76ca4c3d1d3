package engine

// Known steps: the steps as this process's Appends last left them (a
// session's commits, a group's starts and outcomes), for a background
// group to sort its steps by (readGroup) instead of reading each from the
// World. What a group reads only decides what it tries: its start is a
// conditional Append, which the World refuses for a step another executor
// runs or that has ended since, and the group then reads the steps left
// from the World (rereadGroup). A step's name and input never change, and
// an ended step stays ended, so a step known here is one a World read
// could have returned a moment before. A wide fan-out's group read each of
// its steps (5,000 reads in a 5,000-step fan-out) that its session had
// just created in the same process.

import (
	"sync"

	"github.com/skeinflow/skein/world"
)

// Bounds of what knownSteps keeps; past them, the runs first noted are
// forgotten first.
const (
	knownMaxBytes = 8 << 20
	knownMaxRuns  = 256
)

type knownSteps struct {
	mu    sync.Mutex
	bytes int
	runs  map[string]map[string]knownStep
	order []string // runs, first noted first
}

// knownStep is a step as the event at seq left it, and the latest of its
// attempts whose step_started this process appended (started, zero when
// none), with whether a queue executor started it (queued).
type knownStep struct {
	seq     int64
	step    world.Step
	bytes   int
	started int
	queued  bool
}

func newKnownSteps() *knownSteps {
	return &knownSteps{runs: map[string]map[string]knownStep{}}
}

// note keeps the steps an Append to run left (res), each unless a later
// event's is kept.
func (ks *knownSteps) note(runID string, res *world.AppendResult) {
	if ks == nil || res == nil {
		return
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	for _, r := range res.Results {
		if r.Event == nil || r.Step == nil || r.Step.StepID == "" {
			continue
		}
		steps := ks.runs[runID]
		if steps == nil {
			steps = map[string]knownStep{}
			ks.runs[runID] = steps
			ks.order = append(ks.order, runID)
		}
		old, ok := steps[r.Step.StepID]
		started, queued := old.started, old.queued
		if d, isStart := r.Event.Data.(*world.StepStarted); isStart && d.Attempt > started {
			started, queued = d.Attempt, d.Queued
		}
		if ok && old.seq >= r.Event.Seq {
			old.started, old.queued = started, queued
			steps[r.Step.StepID] = old
			continue
		}
		k := knownStep{seq: r.Event.Seq, step: *r.Step, bytes: knownBytes(r.Step), started: started, queued: queued}
		steps[r.Step.StepID] = k
		ks.bytes += k.bytes - old.bytes
	}
	if res.Run != nil && res.Run.Status.Terminal() {
		ks.forget(runID) // no group of it starts a step
	}
	for len(ks.order) > 0 && (ks.bytes > knownMaxBytes || len(ks.runs) > knownMaxRuns) {
		ks.forget(ks.order[0])
	}
}

// knownBytes is about what keeping st holds: its payloads and errors,
// and a fixed overhead.
func knownBytes(st *world.Step) int {
	n := 256 + len(st.Input) + len(st.Output) + world.ErrorSize(st.Error)
	if c := st.Compensation; c != nil {
		n += 128 + len(c.Step) + world.ErrorSize(c.Error)
	}
	return n
}

// get returns step id of run as last noted, nil when not known.
func (ks *knownSteps) get(runID, id string) *world.Step {
	if ks == nil {
		return nil
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.runs[runID][id]
	if !ok {
		return nil
	}
	st := k.step
	return &st
}

// startedQueued reports whether attempt of step id of run was started by a
// queue executor (world.StepStarted.Queued), as the step_started this
// process appended for it says; known is false when it noted none for that
// attempt. Each attempt has one step_started, and an appended event never
// changes, so the answer is the one the step's events in the World give.
func (ks *knownSteps) startedQueued(runID, id string, attempt int) (queued, known bool) {
	if ks == nil || attempt <= 0 {
		return false, false
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.runs[runID][id]
	if !ok || k.started != attempt {
		return false, false
	}
	return k.queued, true
}

// forget drops run's steps; ks.mu is held.
func (ks *knownSteps) forget(runID string) {
	for _, k := range ks.runs[runID] {
		ks.bytes -= k.bytes
	}
	delete(ks.runs, runID)
	for i, id := range ks.order {
		if id == runID {
			ks.order = append(ks.order[:i], ks.order[i+1:]...)
			break
		}
	}
}
