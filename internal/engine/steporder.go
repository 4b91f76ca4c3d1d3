package engine

// stepOrder keeps a replay's open steps (replayer.openSteps) in the order
// the code created them, so that the scheduler finds the first steps it
// may start without looking at all the others (firstRunnable): a session
// of a wide fan-out asks at every commit, and the map of its open steps
// holds thousands. Settled steps are dropped as it goes.
type stepOrder struct {
	ops []*op
	// unsorted: a step was added out of creation order (the log's order,
	// which a replay follows, should make that impossible): it is not
	// used then.
	unsorted bool
	// looked counts the steps looked at to find the first runnable ones,
	// here or in the map (for tests).
	looked int
	// timed holds the open steps that may have a timer (a retry's time, a
	// lease), each once: every step whose retryAfter or leaseUntil was set
	// (timer), until eachTimed finds it settled or queued. In a wide
	// fan-out they are the few running here or retrying, among thousands
	// queued to background executors or held back.
	timed []*op
	// walked counts the steps eachTimed looked at (for tests).
	walked int
}

// timer notes that o's retry time or lease was set: o may have a timer.
func (so *stepOrder) timer(o *op) {
	if !o.timed {
		o.timed = true
		so.timed = append(so.timed, o)
	}
}

// add notes o, just created (opened), once.
func (so *stepOrder) add(o *op) {
	if o.ordered {
		return
	}
	o.ordered = true
	if n := len(so.ops); n > 0 && so.ops[n-1].index > o.index {
		so.unsorted = true
	}
	so.ops = append(so.ops, o)
}

// usable reports whether so holds the open steps in order (open of them
// among settled ones): nil or unsorted, the caller looks at the map.
func (so *stepOrder) usable(open int) bool {
	return so != nil && !so.unsorted && len(so.ops) >= open
}

// look counts one step looked at elsewhere (the map of open steps).
func (so *stepOrder) look() {
	if so != nil {
		so.looked++
	}
}

// first returns the first n open steps, in creation order, that may start
// (ok), dropping the settled steps it passes.
func (so *stepOrder) first(n int, ok func(*op) bool) []*op {
	var out []*op
	kept := so.ops[:0]
	i := 0
	for ; i < len(so.ops) && len(out) < n; i++ {
		o := so.ops[i]
		so.looked++
		if o.settled {
			continue
		}
		kept = append(kept, o)
		if ok(o) {
			out = append(out, o)
		}
	}
	so.ops = append(kept, so.ops[i:]...)
	return out
}
