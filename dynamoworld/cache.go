package dynamoworld

import (
	"container/list"
	"sync"

	"github.com/skeinflow/skein/world"
)

// runCache keeps the snapshots of recently written runs (LRU), so that the
// next commit to a run needs no read: one round trip per commit.
type runCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List
	m   map[string]*list.Element
}

type cacheEntry struct {
	runID string
	snap  *snapshot
}

func newRunCache(n int) *runCache {
	return &runCache{max: n, ll: list.New(), m: map[string]*list.Element{}}
}

// get returns the run's snapshot, or nil. Cached snapshots are never
// changed (a commit builds a new one), so the caller must not change it.
func (c *runCache) get(runID string) *snapshot {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[runID]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cacheEntry).snap
}

// put caches s, which the caller must not change afterwards.
func (c *runCache) put(runID string, s *snapshot) { c.store(runID, s, nil) }

// store caches s unless the cache holds a newer snapshot of the run; one as
// new is replaced when replace (nil: always) says so.
func (c *runCache) store(runID string, s *snapshot, replace func(old *snapshot) bool) {
	if c.max <= 0 || s.run == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		old := e.Value.(*cacheEntry).snap
		if old.run != nil && (old.run.LastSeq > s.run.LastSeq || old.run.LastSeq == s.run.LastSeq && replace != nil && !replace(old)) {
			return // a newer snapshot got here first
		}
		s.trim()
		s.global = nil
		s.blind = false
		e.Value.(*cacheEntry).snap = s
		c.ll.MoveToFront(e)
		return
	}
	s.trim()
	s.global = nil
	s.blind = false
	c.m[runID] = c.ll.PushFront(&cacheEntry{runID: runID, snap: s})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*cacheEntry).runID)
	}
}

// putPrimed caches s, a snapshot folded from the run's log (prime.go),
// unless the cache holds a later one or a complete one as new; one as new
// but incomplete is merged into s (snapshot.merge).
func (c *runCache) putPrimed(runID string, s *snapshot) {
	c.store(runID, s, func(old *snapshot) bool {
		if old.complete {
			return false
		}
		s.merge(old)
		return true
	})
}

func (c *runCache) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		c.ll.Remove(e)
		delete(c.m, runID)
	}
}

// setStreams records in the run's cached snapshot that the run has streams
// (this World flagged its head).
func (c *runCache) setStreams(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		ce := e.Value.(*cacheEntry)
		if ce.snap.streams != streamsSome {
			snap := ce.snap.clone()
			snap.streams = streamsSome
			ce.snap = snap
		}
	}
}

// setStep records a step changed outside an event (a lease renewal) in the
// cached snapshot that knows it (copy on write).
// setLease records a lazy step's renewed lease (its lease record): the
// step stays lazy.
func (c *runCache) setLease(st *world.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[st.RunID]; ok {
		ce := e.Value.(*cacheEntry)
		if old, known := ce.snap.steps[st.StepID]; known && old != nil && old.Attempt == st.Attempt && old.Status == st.Status {
			snap := ce.snap.clone()
			c := *st
			snap.steps[st.StepID] = &c
			ce.snap = snap
		}
	}
}

func (c *runCache) setStep(st *world.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[st.RunID]; ok {
		ce := e.Value.(*cacheEntry)
		if old, known := ce.snap.steps[st.StepID]; known && old != nil && old.Attempt == st.Attempt {
			snap := ce.snap.clone()
			snap.steps[st.StepID] = st
			delete(snap.lazy, st.StepID) // the renewal wrote its item
			ce.snap = snap
		}
	}
}
