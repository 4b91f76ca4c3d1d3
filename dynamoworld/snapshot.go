package dynamoworld

import (
	"fmt"
	"maps"
	"sync"

	"github.com/skeinflow/skein/world"
)

// snapshot is what the World knows of one run as of run.LastSeq: the run and
// the entities of it that it has seen. Commits are planned on it (plan.go),
// and what it says is true only while the run's last sequence number is
// run.LastSeq, which the commit's fence checks. Its fields obey these
// invariants (snapshot.check asserts those it can see alone):
//
//   - S1, current: everything in it is the run as of run.LastSeq (a nil run:
//     the run does not exist), except step leases, which a renewal changes
//     without an event (a commit that relies on one checks it).
//   - S2, known or unknown: in steps, waits and hooks, a key with a nil
//     value is known absent, a missing key is unknown (read when an event
//     names it); hooks holds only the run's own active hooks.
//   - S3, blind: the run was not read but assumed absent, for a commit that
//     starts with run_created (whose conditions check it); then run is nil,
//     nothing else is known, and the snapshot is never cached.
//   - S4, counted: nHooks and nWaits are the run's active hooks and waits as
//     of run.LastSeq. Every commit item carries them (nh, nw), counted from
//     the snapshot it was judged and fenced on, so they are exact by
//     induction from run_created (0).
//   - S5, complete: hooks and waits hold every active hook and wait of the
//     run (this World created the run and made every commit since, or
//     folded its whole log), so their live counts are nHooks and nWaits.
//     (A run's end reads its entities all the same: runEndItems.)
//   - S6, stepIDs: when not nil, every step ID the run has (a superset: IDs
//     are added once their commit lands). A step ID missing from it is a
//     proof of absence that needs no condition on the step's item: only
//     then may a new step be lazy.
//   - S7, lazy: the steps without an item, as the newest commit lists them
//     (u: step ID -> the key of the commit whose events are their state),
//     at most maxLazySteps. A listed step may have an item after all (a
//     lease renewal by code before lease records wrote it): the item wins.
//   - S9, step count: nSteps is the number of steps the run has as of
//     run.LastSeq, -1 when unknown (a commit written before the count).
//     Commits carry it (ns) as they carry nh and nw; ListSteps checks a
//     whole listing against it (a step item deleted behind the World).
//   - S10, bare: the steps in steps known to have no item after they
//     ended on the inline path (a lazy step completed or failed: its state
//     is its events, bare.go); mayBare: the run may have such steps (its
//     head says so, b: created by this format), so an absent step item is
//     no proof that the step is absent.
//   - S8, streams: what the run head's flag os said of the run's streams
//     when read or written (a belief); endChecked: the run ended on the
//     condition that the flag still said none, so it had no stream then
//     (the run is ended, streams is streamsNone).
type snapshot struct {
	run   *world.Run
	steps map[string]*world.Step
	waits map[string]*world.Wait
	hooks map[string]*world.Hook // the run's active hooks
	// global holds hook items read by hook ID for hook_created (a hook ID is
	// unique across runs); fresh reads only.
	global map[string]*world.Hook

	blind          bool // S3
	nHooks, nWaits int  // S4
	nSteps         int  // S9
	complete       bool // S5
	stepIDs        *idSet
	lazy           map[string]int64
	bare           map[string]struct{} // S10
	mayBare        bool                // S10
	streams        streamState
	endChecked     bool
}

// blindSnapshot is the snapshot of a run assumed absent (S3): a commit
// that creates the run is planned on it without a read.
func blindSnapshot() *snapshot {
	s := newSnapshot(nil)
	s.blind, s.complete, s.stepIDs, s.mayBare = true, true, newIDSet(), true
	s.nSteps = 0
	s.streams = streamsNone // its head is created with os = 0
	return s
}

// check reports a broken invariant that the snapshot shows by itself.
func (s *snapshot) check() error {
	var runID string
	if s.run != nil {
		runID = s.run.RunID
	}
	switch {
	case s.blind && s.run != nil:
		return fmt.Errorf("S3: a blind snapshot of run %s has a run", runID)
	case s.nHooks < 0 || s.nWaits < 0:
		return fmt.Errorf("S4: run %s: negative counts %d, %d", runID, s.nHooks, s.nWaits)
	case s.complete && (live(s.hooks) != s.nHooks || live(s.waits) != s.nWaits):
		return fmt.Errorf("S5: complete snapshot of run %s knows %d hooks and %d waits, counts %d and %d", runID, live(s.hooks), live(s.waits), s.nHooks, s.nWaits)
	case len(s.lazy) > maxLazySteps:
		return fmt.Errorf("S7: run %s: %d lazy steps", runID, len(s.lazy))
	case len(s.bare) > 0 && !s.mayBare:
		return fmt.Errorf("S10: run %s: %d bare steps, but not mayBare", runID, len(s.bare))
	case s.endChecked && (s.run == nil || !s.run.Status.Terminal() || s.streams != streamsNone):
		return fmt.Errorf("S8: run %s: end checked, but not ended without streams", runID)
	}
	for id := range s.bare {
		if st := s.steps[id]; st == nil || !endsBare(st) {
			return fmt.Errorf("S10: run %s: bare step %s is not known ended", runID, id)
		}
	}
	for id, h := range s.hooks {
		if h != nil && h.RunID != runID {
			return fmt.Errorf("S2: run %s: hook %s of run %s", runID, id, h.RunID)
		}
	}
	return nil
}

// idSet is a grow-only set of step IDs, shared by the snapshots of a run.
type idSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func newIDSet() *idSet { return &idSet{m: map[string]struct{}{}} }

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[id]
	return ok
}

func (s *idSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = struct{}{}
}

// live counts the entities of m known present.
func live[V any](m map[string]*V) int {
	n := 0
	for _, v := range m {
		if v != nil {
			n++
		}
	}
	return n
}

// The counts of a run's active hooks and of its waits after a commit, on
// the commit item.
const (
	aActiveHooks = "nh"
	aWaits       = "nw"
)

func setCounts(it item, hooks, waits int) {
	setN(it, aActiveHooks, int64(hooks))
	setN(it, aWaits, int64(waits))
}

// aSteps, on a commit item, counts the run's steps after the commit (S9);
// commits written before it have none.
const aSteps = "ns"

// setStepCount sets a commit item's count of steps, when known.
func setStepCount(it item, n int) {
	if n >= 0 {
		setN(it, aSteps, int64(n))
	}
}

// decodeStepCount reads a commit item's count of steps, -1 when it has
// none.
func decodeStepCount(it item) int {
	if _, ok := it[aSteps]; !ok {
		return -1
	}
	return int(getN(it, aSteps))
}

// decodeCounts reads a commit item's counts, which every commit has.
func decodeCounts(it item) (hooks, waits int, err error) {
	_, h := it[aActiveHooks]
	_, w := it[aWaits]
	if !h || !w {
		return 0, 0, fmt.Errorf("dynamoworld: commit %s has no counts of hooks and waits (an item of another format)", keyOf(it))
	}
	return int(getN(it, aActiveHooks)), int(getN(it, aWaits)), nil
}

func newSnapshot(run *world.Run) *snapshot {
	return &snapshot{
		run: run, steps: map[string]*world.Step{}, waits: map[string]*world.Wait{},
		hooks: map[string]*world.Hook{}, global: map[string]*world.Hook{}, lazy: map[string]int64{},
		bare: map[string]struct{}{}, nSteps: -1,
	}
}

func (s *snapshot) clone() *snapshot {
	c := *s
	c.steps = cloneMap(s.steps)
	c.waits = cloneMap(s.waits)
	c.hooks = cloneMap(s.hooks)
	c.global = map[string]*world.Hook{}
	c.lazy = maps.Clone(s.lazy)
	if c.lazy == nil {
		c.lazy = map[string]int64{}
	}
	c.bare = maps.Clone(s.bare)
	if c.bare == nil {
		c.bare = map[string]struct{}{}
	}
	return &c
}

func cloneMap[V any](m map[string]*V) map[string]*V {
	out := make(map[string]*V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// maxCachedEntities bounds the entities one cached run keeps; beyond it the
// finished steps are forgotten (and read again if an event names them).
// The bound keeps the copy a commit makes of the snapshot small.
const maxCachedEntities = 64

func (s *snapshot) trim() {
	if len(s.steps)+len(s.waits)+len(s.hooks) <= maxCachedEntities {
		return
	}
	for id, st := range s.steps {
		if st == nil || st.Status.Terminal() {
			delete(s.steps, id)
			delete(s.bare, id)
		}
	}
	for id, w := range s.waits {
		if w == nil {
			delete(s.waits, id)
		}
	}
	for id, h := range s.hooks {
		if h == nil {
			delete(s.hooks, id)
		}
	}
	if len(s.steps)+len(s.waits)+len(s.hooks) > 8*maxCachedEntities {
		// A run with this many live entities: forget them (they are read
		// again when an event names them, and queried at the run's end).
		clear(s.steps)
		clear(s.bare)
		clear(s.waits)
		clear(s.hooks)
		s.complete = false
	}
}
