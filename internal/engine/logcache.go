package engine

// The log cache: what a session loaded of its run's log outlives the
// session, so that the run's next continuation in this process (a hook
// payload's wake-up, a timer's) loads only the events appended since
// (loadNew) instead of the whole log. A webhook flood then costs each
// delivery what it appended, not the whole log again: without it, the
// 1,000th delivery reads a thousand payloads. A log is immutable and
// append-only, so a cached prefix stays true; a session takes its run's
// entry out while it runs (the run lease makes it the only one) and puts
// it back when it ends. The cache is bounded in runs and in payload
// bytes (Config.LogCacheBytes), least recently used out first.

import (
	"container/list"
	"sync"

	"github.com/skeinflow/skein/world"
)

// maxCachedRuns bounds the runs whose logs the cache keeps.
const maxCachedRuns = 256

// logCache keeps runState by run ID.
type logCache struct {
	mu    sync.Mutex
	max   int // bytes; <= 0 keeps nothing
	bytes int
	lru   *list.List // of *cachedLog, most recently used first
	byRun map[string]*list.Element
}

type cachedLog struct {
	runID string
	st    runState
}

func newLogCache(maxBytes int) *logCache {
	return &logCache{max: maxBytes, lru: list.New(), byRun: map[string]*list.Element{}}
}

// take removes and returns the cached state of run, nil when none.
func (c *logCache) take(runID string) *runState {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byRun[runID]
	if !ok {
		return nil
	}
	c.remove(el)
	st := el.Value.(*cachedLog).st
	return &st
}

// put keeps st for run, unless the run has ended (no continuation will
// need it) or its log alone is larger than the cache.
func (c *logCache) put(runID string, st runState) {
	if c.max <= 0 || st.log.len() == 0 || st.runStatus.Terminal() || st.log.bytes > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byRun[runID]; ok {
		c.remove(el)
	}
	c.byRun[runID] = c.lru.PushFront(&cachedLog{runID: runID, st: st})
	c.bytes += st.log.bytes
	for c.bytes > c.max || c.lru.Len() > maxCachedRuns {
		c.remove(c.lru.Back())
	}
}

func (c *logCache) remove(el *list.Element) {
	cl := el.Value.(*cachedLog)
	c.lru.Remove(el)
	delete(c.byRun, cl.runID)
	c.bytes -= cl.st.log.bytes
}

// eventBytes is about what ev holds in memory: its payloads and a fixed
// overhead.
func eventBytes(ev *world.Event) int {
	const overhead = 256
	n := overhead
	switch d := ev.Data.(type) {
	case *world.RunCreated:
		n += len(d.Input) + len(d.ExecutionContext) + len(d.Secret)
	case *world.RunCompleted:
		n += len(d.Output)
	case *world.StepCreated:
		n += len(d.Input)
	case *world.StepCompleted:
		n += len(d.Result)
	case *world.HookCreated:
		n += len(d.Metadata)
	case *world.HookReceived:
		n += len(d.Payload)
	case *world.StepFailed:
		n += errorBytes(d.Error)
	case *world.StepRetrying:
		n += errorBytes(d.Error)
	case *world.RunFailed:
		n += errorBytes(d.Error)
	}
	return n
}
