package engine

import "github.com/skeinflow/skein/world"

// logChunk is the number of events in one chunk of an eventLog.
const logChunk = 256

// eventLog is a run's committed log as a session holds it: append-only, in
// chunks of logChunk events. Appending never moves the events already held,
// so its cost does not depend on the length of the run. (A plain slice is
// copied whole each time it outgrows its capacity: a pause proportional to
// the log, every so many steps, which in a 1000-step run fell on step 994.)
// Pointers it returns stay valid for the session's lifetime.
type eventLog struct {
	chunks [][]world.Event
	n      int
	bytes  int // about what the events hold (eventBytes), for the log cache
}

// len returns the number of events held.
func (l *eventLog) len() int { return l.n }

// add appends ev and returns a pointer to the held copy.
func (l *eventLog) add(ev world.Event) *world.Event {
	if l.n%logChunk == 0 {
		l.chunks = append(l.chunks, make([]world.Event, 0, logChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, ev)
	l.n++
	l.bytes += eventBytes(&ev)
	return &(*c)[len(*c)-1]
}

// each calls fn with every event, in log order.
func (l *eventLog) each(fn func(ev *world.Event)) {
	for _, c := range l.chunks {
		for i := range c {
			fn(&c[i])
		}
	}
}
