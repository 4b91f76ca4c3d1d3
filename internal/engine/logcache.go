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
//
// An entry may also keep the run's workflow alive, suspended where the
// session left it (sticky.go): at most maxLiveSessions of them, each
// counted as sessionBytes more, least recently used stopped first. An
// entry dropped, replaced or stopped has its workflow's goroutine stopped
// (outside the cache's lock: unwinding runs the workflow's deferred
// calls), and Engine.Close stops them all.

import (
	"container/list"
	"context"
	"sync"

	"github.com/skeinflow/skein/world"
)

// maxCachedRuns bounds the runs whose logs the cache keeps.
const maxCachedRuns = 256

// maxLiveSessions bounds the suspended workflows the cache keeps alive (a
// goroutine each), and sessionBytes is what one is counted as, besides its
// log, against Config.LogCacheBytes: its goroutine's stack and the
// workflow's own state, which the engine cannot measure.
const (
	maxLiveSessions = 64
	sessionBytes    = 64 << 10
)

// logCache keeps runState by run ID.
type logCache struct {
	mu     sync.Mutex
	max    int // bytes; <= 0 keeps nothing
	bytes  int
	live   int        // entries with a suspended workflow
	closed bool       // Engine.Close: no more suspended workflows
	lru    *list.List // of *cachedLog, most recently used first
	byRun  map[string]*list.Element
	out    map[string]*loan // the run's last session, until it puts its entry back
}

// loan is a session's hold on its run's entry, from take to put. A
// session that takes the run's lease just after another released it
// would find no entry, the other still holding it while it finishes
// (afterRelease, then put), and load the whole log and replay the
// workflow: in a wide fan-out, whose background executors take the run
// on one after the other, a few times a run, each as dear as the log is
// long. take waits for that entry instead (see take).
type loan struct {
	done     chan struct{} // closed by put
	released bool          // its session released the run lease (releasing)
	waiting  int           // takes waiting for done
}

type cachedLog struct {
	runID string
	st    runState
	live  *sticky // the run's suspended workflow; nil when none
}

// size is what the entry counts against the cache's bytes.
func (cl *cachedLog) size() int {
	if cl.live != nil {
		return cl.st.log.bytes + sessionBytes
	}
	return cl.st.log.bytes
}

func newLogCache(maxBytes int) *logCache {
	return &logCache{max: maxBytes, lru: list.New(), byRun: map[string]*list.Element{}, out: map[string]*loan{}}
}

// take removes and returns the cached state of run, nil when none, and
// its suspended workflow, if the entry kept one: the caller owns it (goes
// on with it or stops it) and gives it back with put, under the loan
// returned (nil when the cache keeps nothing). When the entry is out
// with a session that has released the run lease (releasing), which
// only finishes before it puts the entry back, take waits for it (or
// ctx): its caller holds the lease now. A session still under the lease
// it took (one whose lease expired while it ran) is not waited for.
func (c *logCache) take(ctx context.Context, runID string) (*runState, *sticky, *loan) {
	if c.max <= 0 {
		return nil, nil, nil
	}
	c.mu.Lock()
	for {
		if el, ok := c.byRun[runID]; ok {
			c.remove(el)
			cl := el.Value.(*cachedLog)
			st := cl.st
			return &st, cl.live, c.lend(runID)
		}
		l := c.out[runID]
		if l == nil || !l.released {
			return nil, nil, c.lend(runID)
		}
		l.waiting++
		c.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
		}
		c.mu.Lock()
		l.waiting--
		if ctx.Err() != nil {
			return nil, nil, c.lend(runID)
		}
	}
}

// lend records a new loan of run's entry; c.mu is held, and released on
// return.
func (c *logCache) lend(runID string) *loan {
	defer c.mu.Unlock()
	l := &loan{done: make(chan struct{})}
	c.out[runID] = l
	return l
}

// releasing records whether the session holding l has released its run
// lease (true) or holds it (false).
func (c *logCache) releasing(l *loan, released bool) {
	if l == nil {
		return
	}
	c.mu.Lock()
	l.released = released
	c.mu.Unlock()
}

// giveBack ends loan l of run's entry, once put has kept what it keeps;
// c.mu is held.
func (c *logCache) giveBack(runID string, l *loan) {
	if l == nil {
		return
	}
	if c.out[runID] == l {
		delete(c.out, runID)
	}
	close(l.done)
}

// put keeps st for run, with live, its suspended workflow (nil: none),
// and ends loan l (take),
// unless the run has ended (no continuation will need it), its log alone
// is larger than the cache, or the cache holds a later state of the run
// (another session of it ended after this one took the entry). What it
// does not keep, or drops to make room, has its workflow stopped.
func (c *logCache) put(runID string, st runState, live *sticky, l *loan) {
	if c.max <= 0 || st.log.len() == 0 || st.runStatus.Terminal() || st.log.bytes > c.max {
		c.mu.Lock()
		c.giveBack(runID, l)
		c.mu.Unlock()
		live.stop()
		return
	}
	var stop []*sticky
	defer func() {
		for _, l := range stop {
			l.stop()
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.giveBack(runID, l)
	if c.closed && live != nil {
		stop, live = append(stop, live), nil
	}
	if el, ok := c.byRun[runID]; ok {
		if old := el.Value.(*cachedLog); old.st.lastSeq > st.lastSeq {
			stop = append(stop, live)
			return
		}
		stop = append(stop, c.remove(el))
	}
	cl := &cachedLog{runID: runID, st: st, live: live}
	c.byRun[runID] = c.lru.PushFront(cl)
	c.bytes += cl.size()
	if live != nil {
		c.live++
	}
	for c.bytes > c.max || c.lru.Len() > maxCachedRuns {
		stop = append(stop, c.remove(c.lru.Back()))
	}
	for el := c.lru.Back(); c.live > maxLiveSessions && el != nil; el = el.Prev() {
		stop = append(stop, c.detach(el.Value.(*cachedLog)))
	}
}

// close stops every suspended workflow the cache keeps and keeps none
// from now on; the logs stay.
func (c *logCache) close() {
	var stop []*sticky
	c.mu.Lock()
	c.closed = true
	for el := c.lru.Front(); el != nil; el = el.Next() {
		stop = append(stop, c.detach(el.Value.(*cachedLog)))
	}
	c.mu.Unlock()
	for _, l := range stop {
		l.stop()
	}
}

// drop forgets run's entry and stops its suspended workflow: for a run
// that ended outside its sessions (failForeign), whose entry no session
// may be given any more (it would load the end and drop it anyway, but the
// message that would bring one may never come to this process).
func (c *logCache) drop(runID string) {
	var live *sticky
	c.mu.Lock()
	if el, ok := c.byRun[runID]; ok {
		live = c.remove(el)
	}
	c.mu.Unlock()
	live.stop()
}

// remove drops an entry and returns its suspended workflow, for the
// caller to stop once it has released the lock.
func (c *logCache) remove(el *list.Element) *sticky {
	cl := el.Value.(*cachedLog)
	c.lru.Remove(el)
	delete(c.byRun, cl.runID)
	c.bytes -= cl.size()
	live := cl.live
	if live != nil {
		c.live--
	}
	return live
}

// detach takes an entry's suspended workflow out of it, keeping its log,
// and returns it (nil when none) for the caller to stop.
func (c *logCache) detach(cl *cachedLog) *sticky {
	live := cl.live
	if live != nil {
		c.bytes -= sessionBytes
		c.live--
		cl.live = nil
	}
	return live
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
		n += world.ErrorSize(d.Error)
	case *world.StepRetrying:
		n += world.ErrorSize(d.Error)
	case *world.RunFailed:
		n += world.ErrorSize(d.Error)
	}
	return n
}
