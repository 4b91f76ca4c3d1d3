package dynamoworld

import "context"

// The end of a run's log, kept outside the log. A serial run's commits
// write no entity item (bare steps), so the write marks of the items cannot
// show that its newest commit was deleted: the log would read dense up to
// the commit before, and the step that commit ended would run again. The
// run lease item keeps the mark instead: ReleaseRunLease of a live run
// leaves the item, without its owner and expired, with lq, the run's last
// sequence number as the releasing World knows it committed (its cached
// snapshot's; a release never lowers lq). The reads a commit is judged on
// read lq beside the log's end: a load (with its entities), the Query of a
// run's end (runEndItems) and a ListEvents of the whole log (a prime); an
// lq past the newest commit reads the run again (a commit and a release
// may land between the two reads), then is world.ErrCorrupt naming the
// missing events. The release was a write already (a DeleteItem, now an
// UpdateItem of the same item).
//
// What it does not see: a commit deleted before any release recorded it
// (its writer crashed holding the lease), or the lease item deleted with
// it. An item with a ttl belongs to an ended run (the retention sweep sets
// it): its lq is not read.

// aLogFloor is the run lease item's mark of the log's end at its last
// release.
const aLogFloor = "lq"

// logFloor is the mark a run lease item read holds (0: none).
func logFloor(lease item) int64 {
	if lease == nil || getN(lease, attrTTL) > 0 {
		return 0
	}
	return getN(lease, aLogFloor)
}

// readFloor starts a strongly consistent read of runID's lease item and
// returns a function that waits for it and returns the item's logFloor.
func (w *store) readFloor(ctx context.Context, runID string) func() (int64, error) {
	type result struct {
		floor int64
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		it, err := w.getItem(ctx, leaseKey(runID))
		ch <- result{logFloor(it), err}
	}()
	return func() (int64, error) {
		r := <-ch
		return r.floor, r.err
	}
}

// checkFloor decides on a log read to end (its last sequence number)
// against the lease item's mark (floor), read after it: a commit (and a
// release) landing between the two is legitimate, and a read of the run
// now sees it; a newest commit still short of the mark is
// world.ErrCorrupt. Past the run's TTL its items go one by one: no error.
func (w *store) checkFloor(ctx context.Context, runID string, end, floor int64) error {
	if floor <= end {
		return nil
	}
	_, _, last, err := w.queryRun(ctx, runID)
	if err != nil || last == nil {
		return err
	}
	if end := getN(last, aLastSeq); end < floor && !w.expired(last) {
		return &gapError{table: w.cfg.Table, runID: runID, from: end + 1, to: floor, released: true}
	}
	return nil
}
