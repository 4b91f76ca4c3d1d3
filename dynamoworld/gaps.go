package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
	"github.com/skeinflow/skein/world"
)

// A run's log is its commit items, each keyed by the run's last sequence
// number before it (prev) and holding the events prev+1 .. ls: the commits
// chain (each one's prev is the ls of the one before, the first's is 0).
// A commit item deleted behind the World (a tool, a mistaken TTL, a
// restore that missed items) breaks the chain; a read that returned the
// commits around the hole would hand its caller a shorter log, a fold of
// it a different history, and a commit judged on it would write new events
// at the missing numbers. So every read of a run's events checks the chain
// from where it starts (event 1 or its cursor) to where it stops, and a
// read that reaches the end of the log and sees the run's head checks that
// they agree (logEnd): a hole is world.ErrCorrupt naming the table, the
// run and the missing range, never a shorter log. See RELIABILITY.md,
// Tampering and corruption.

// logChain checks the commits one read returns, in the order it returns
// them (ascending or descending), for holes.
type logChain struct {
	table, runID string
	desc         bool
	// want is the key (prev) the next commit must have when ascending,
	// and its ls when descending; known is false until a commit fixes it
	// (a read back from the end takes the newest commit as it is).
	want  int64
	known bool
	// cursor: descending from a cursor, the key of the first commit to
	// read (the cursor's own), -1 otherwise.
	cursor int64
}

// newLogChain starts a chain check for a read from the start of the log
// (cursor 0) or from the commit keyed at cursor (the one holding the
// cursor's event, which the read returns first).
func newLogChain(table, runID string, desc bool, fromStart bool, cursorCommit int64) *logChain {
	c := &logChain{table: table, runID: runID, desc: desc, cursor: -1}
	switch {
	case !desc && fromStart:
		c.want, c.known = 0, true
	case !desc:
		c.want, c.known = cursorCommit, true // the cursor's own commit first
	case !fromStart:
		c.cursor = cursorCommit
	}
	return c
}

// add checks the next commit read: its key, its ls and its count of
// events (n, decoded from it) against the one before.
func (c *logChain) add(it item, n int) error {
	prev, ok := prevFromSK(getS(it, attrSK))
	if !ok {
		return corrupt(it, "commit key", fmt.Errorf("sort key %q", getS(it, attrSK)))
	}
	ls := getN(it, aLastSeq)
	if ls != prev+int64(n) || n == 0 {
		return fmt.Errorf("%w: dynamoworld: table %s, run %s: commit %s holds %d events, but its key and last sequence number say %d-%d",
			world.ErrCorrupt, c.table, c.runID, keyOf(it), n, prev+1, ls)
	}
	first := !c.known
	c.known = true
	switch {
	case c.desc && first && c.cursor >= 0 && prev != c.cursor:
		// The cursor's own commit is gone since its page was read.
		return c.missing(ls+1, max(ls+1, c.cursor+1))
	case c.desc && first:
	case c.desc && ls != c.want:
		if ls > c.want {
			return c.overlap(it, c.want)
		}
		return c.missing(ls+1, c.want)
	case !c.desc && prev != c.want:
		if prev < c.want {
			return c.overlap(it, c.want)
		}
		return c.missing(c.want+1, prev)
	}
	if c.desc {
		c.want = prev
	} else {
		c.want = ls
	}
	return nil
}

// done checks a read that reached the end of its range: descending, the
// oldest commit read must be the run's first.
func (c *logChain) done() error {
	if c.desc && c.known && c.want != 0 {
		return c.missing(1, c.want)
	}
	return nil
}

func (c *logChain) missing(from, to int64) error {
	return &gapError{table: c.table, runID: c.runID, from: from, to: to}
}

func (c *logChain) overlap(it item, at int64) error {
	return fmt.Errorf("%w: dynamoworld: table %s, run %s: commit %s overlaps the commit before it (event %d)",
		world.ErrCorrupt, c.table, c.runID, keyOf(it), at)
}

// gapError is the world.ErrCorrupt of a run's log with events missing.
type gapError struct {
	table, runID string
	from, to     int64 // the missing range, inclusive; to < from: from on
	released     bool  // to is the log's end the run lease's last release recorded (floors.go)
}

func (e *gapError) Error() string {
	if e.released {
		return fmt.Sprintf("%v: dynamoworld: table %s, run %s: events %d-%d are missing (the log ends at %d; its run lease was released after event %d)", world.ErrCorrupt, e.table, e.runID, e.from, e.to, e.from-1, e.to)
	}
	if e.to < e.from {
		return fmt.Sprintf("%v: dynamoworld: table %s, run %s: the run's events from %d on are missing (its head says the run went further)", world.ErrCorrupt, e.table, e.runID, e.from)
	}
	return fmt.Sprintf("%v: dynamoworld: table %s, run %s: events %d-%d are missing (commit item %s absent)", world.ErrCorrupt, e.table, e.runID, e.from, e.to, commitSK(e.from-1))
}

func (e *gapError) Unwrap() error { return world.ErrCorrupt }

// endsBeforeHead reports whether a run's newest commit (last) and its head
// disagree on whether the run has ended: the run's status changes only
// with a commit that writes the head in the same transaction, and a run
// never leaves a terminal status, so a head that says the run ended over
// a live newest commit means the commits that ended it are missing, and a
// terminal commit over a live head (or two different terminal statuses)
// means one of the two was edited. A Query is read committed (doc.go,
// Table): the two may disagree for the moment a transaction lands during
// it, which a second read rules out (confirmEnd).
func endsBeforeHead(head, last item) bool {
	if head == nil || last == nil {
		return false
	}
	hs, ls := world.RunStatus(getS(head, aStatus)), world.RunStatus(getS(last, aRunStatus))
	return hs.Terminal() != ls.Terminal() || hs.Terminal() && hs != ls
}

// truncated is the world.ErrCorrupt of a run whose head and newest commit
// (last) disagree on its end (endsBeforeHead), read twice: a head that
// says it ended over a live commit is a log that ends early (a
// *gapError); the other way, the status of one of the two was edited.
func (w *store) truncated(runID string, head, last item) error {
	hs, ls := world.RunStatus(getS(head, aStatus)), world.RunStatus(getS(last, aRunStatus))
	if hs.Terminal() && !ls.Terminal() {
		return &gapError{table: w.cfg.Table, runID: runID, from: getN(last, aLastSeq) + 1, to: 0}
	}
	return fmt.Errorf("%w: DynamoDB table %s: run %s: its newest commit %s says the run is %s, its head %s says %s (they are written together)",
		world.ErrCorrupt, w.cfg.Table, runID, keyOf(last), ls, skRunHead, hs)
}

// confirmEnd reads a run's head and newest commit again after a read saw
// its head ended and its newest commit live: the same
// disagreement twice is world.ErrCorrupt (queryRun says so); a newer
// commit means a transaction landed during the first read, and nil.
func (w *store) confirmEnd(ctx context.Context, runID string) error {
	_, _, _, err := w.queryRun(ctx, runID)
	return err
}

// checkLogEnd ends a read's chain check (logChain.done, when the read
// reached the end of its range) and checks the newest commit it read
// against the run's head when it read both ends: ascending to the end, or
// descending from the end (the head comes first).
func (w *store) checkLogEnd(ctx context.Context, runID string, chain *logChain, reached bool, head, newest item, desc bool) error {
	if reached {
		if err := chain.done(); err != nil {
			return err
		}
	}
	if (reached || desc) && endsBeforeHead(head, newest) {
		return w.confirmEnd(ctx, runID)
	}
	return nil
}

// checkLogStart checks, on the first page of a read back from the end of
// the log that stops before its start, that the log has its first commit
// (e#0): the chain is otherwise checked only on the page that reaches it,
// after pages of events returned as fine. One strongly consistent Query
// of the partition's oldest commit key (limit 1, its key alone; DynamoDB
// counts the item's whole size, ceil(size/4 KiB) read units: 1 for most
// runs). An oldest commit other than e#0 is world.ErrCorrupt naming the
// missing range; past the run's TTL (its head's), world.ErrGone. A hole
// after the first commit is found on the page that reaches it: finding it
// sooner would cost a read of the whole log.
func (w *store) checkLogStart(ctx context.Context, runID string, chain *logChain, head item) error {
	if !chain.known || chain.want == 0 {
		return nil // no commit read, or the first one was
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(w.cfg.Table),
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(runPK(runID))) + " AND " +
			e.n(attrSK) + " BETWEEN " + e.v(str(prefCommit)) + " AND " + e.v(str(commitsEnd))),
		ProjectionExpression: aws.String(e.n(attrPK) + ", " + e.n(attrSK)),
		ConsistentRead:       aws.Bool(true),
		Limit:                aws.Int32(1),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.Query(ctx, in)
	if err != nil {
		return ddbErr("Query", w.cfg.Table, err)
	}
	w.countRead(out.ConsumedCapacity)
	first := chain.want // the oldest commit read: none older is left
	if len(out.Items) > 0 {
		if first, _ = prevFromSK(getS(out.Items[0], attrSK)); first == 0 {
			return nil
		}
	}
	if w.expired(head) {
		return fmt.Errorf("%w: DynamoDB table %s: run %s has expired (its first commit item is deleted)", world.ErrGone, w.cfg.Table, runID)
	}
	return &gapError{table: w.cfg.Table, runID: runID, from: 1, to: first}
}

// listEventsOnce is listEvents that reads again once when it finds a hole
// or commits without a head: a Query is read committed, not a snapshot, so
// in theory two commits landing between its reads of two items could show
// the second without the first (a run's creation landing during a read
// back from the head, its first commit without its head). The first is
// then committed, and a second read sees it; the same hole twice is
// world.ErrCorrupt.
func (w *store) listEventsOnce(ctx context.Context, runID, corr string, pg world.Pagination, onCommit func(prev int64, it item, evs []world.Event)) (*world.Page[world.Event], error) {
	page, err := w.listEvents(ctx, runID, corr, pg, onCommit)
	var gap *gapError
	if errors.As(err, &gap) || missingHead(err) {
		return w.listEvents(ctx, runID, corr, pg, onCommit)
	}
	return page, err
}

// aWrittenAt, on a run's step, wait and hook-link items, is the last
// sequence number of the commit that last wrote the item (items written
// before it existed have none). The newest commit of a live run deleted
// leaves a log that ends early and reads dense; its entities then say the
// run went further. A load that reads an entity newer than the run it
// read checks the run again (entityAhead), and every update of an entity
// is conditioned on it not being newer than the commit's snapshot, so a
// commit judged on a log that ends early is cancelled and judged again on
// a fresh load. A write outside a commit (a lease renewal that writes a
// lazy step's lease record, which a load reads with the step) sets the
// mark of the newest commit it read, and one that updates an item leaves
// the mark alone: no write lowers it. A serial step writes no entity item
// (its commit alone: bare.go), so a deleted newest commit of a run whose
// last commits wrote none is not seen by marks: the log reads dense up to
// the commit before, and the next commit takes its place. The mark
// is under the item's checksum (package itemsum, MarkWrite): an edit that
// lowers or removes it is world.ErrCorrupt on every read of the item.
const aWrittenAt = itemsum.MarkWrite

// isEntity reports whether k is one of a run's step, wait or hook-link
// items (the items a commit's events write in the run's partition).
func isEntity(runID string, k itemKey) bool {
	if k.pk != runPK(runID) {
		return false
	}
	return strings.HasPrefix(k.sk, prefStep) || strings.HasPrefix(k.sk, prefWait) || strings.HasPrefix(k.sk, prefHook)
}

// markEntities sets aWrittenAt on the run's entity items a commit puts or
// updates (encs: their final encodings), to the commit's last sequence
// number.
func markEntities(runID string, ls int64, encs []*encItem) {
	for _, e := range encs {
		if isEntity(runID, itemKey{getS(e.it, attrPK), getS(e.it, attrSK)}) {
			setN(e.it, aWrittenAt, ls)
		}
	}
}

// notAhead conditions an entity's update on the item not having been
// written by a commit after prev (the commit's snapshot), and adds cond.
func notAhead(prev int64, cond func(e *expr) string) func(e *expr) string {
	return func(e *expr) string {
		c := "(attribute_not_exists(" + e.n(aWrittenAt) + ") OR " + e.n(aWrittenAt) + " <= " + e.v(num(prev)) + ")"
		if cond != nil {
			c = "(" + cond(e) + ") AND " + c
		}
		return c
	}
}

// entityAhead returns the highest aWrittenAt of the entity items got that
// is past lastSeq, 0 when none is.
func entityAhead(got []item, lastSeq int64) int64 {
	var ahead int64
	for _, it := range got {
		if it != nil {
			if q := getN(it, aWrittenAt); q > lastSeq && q > ahead {
				ahead = q
			}
		}
	}
	return ahead
}

// checkAhead decides on an entity item newer than the run a load read
// (ahead > 0): the load's Query came before its TransactGetItems, so a
// commit landing between them is legitimate, and a strongly consistent
// read now sees it (its transaction was committed when its entity was
// read). A newest commit still short of ahead means commit items are
// missing: world.ErrCorrupt.
func (w *store) checkAhead(ctx context.Context, runID string, ahead int64) error {
	_, _, last, err := w.queryRun(ctx, runID)
	if err != nil {
		return err
	}
	if ls := getN(last, aLastSeq); ls < ahead {
		return &gapError{table: w.cfg.Table, runID: runID, from: ls + 1, to: ahead}
	}
	return nil
}

// commitAt checks, strongly consistent, that the commit keyed prev exists,
// after a watch's eventually consistent read found a later one (keyed
// later) but not it: every commit was written after the one before it, so
// once a later one is committed, a consistent read sees this one unless
// it was deleted (world.ErrCorrupt naming the missing range).
func (w *store) commitAt(ctx context.Context, runID string, prev, later int64) error {
	it, err := w.getItem(ctx, commitKey(runID, prev))
	if err != nil || it != nil {
		return err
	}
	return &gapError{table: w.cfg.Table, runID: runID, from: prev + 1, to: later}
}

// requireBody refuses a run created with checksums whose body item is
// missing: the body is written with the head when the run is created and
// never deleted apart from it, so its absence is damage (a run read without
// it would show no input, output or error), not an empty run.
func (w *store) requireBody(runID string, head, body item) error {
	if body != nil || !runSummed(head) {
		return nil
	}
	if w.expired(head) {
		// Past its retention: DynamoDB's TTL deletes a run's items one by
		// one, the body possibly before the head.
		return fmt.Errorf("%w: DynamoDB table %s: run %s has expired (its body item is deleted)", world.ErrGone, w.cfg.Table, runID)
	}
	return fmt.Errorf("%w: DynamoDB table %s: run %s: its body item %s (input, output, error) is missing",
		world.ErrCorrupt, w.cfg.Table, runID, skRunBody)
}

// headError is the world.ErrCorrupt of a run partition that holds commits
// or a body but no head (e~): the head is written with the first commit and
// the body, in one transaction, and deleted only with the run's other items
// by its TTL, so a run read without it would be a run that does not exist
// (ErrNotFound) over a log that does.
type headError struct{ table, runID, found string }

func (e *headError) Error() string {
	return fmt.Sprintf("%v: dynamoworld: table %s, run %s: its head item %s is missing (the partition holds %s)",
		world.ErrCorrupt, e.table, e.runID, skRunHead, e.found)
}

func (e *headError) Unwrap() error { return world.ErrCorrupt }

// headless judges a read of a run partition that found no head but found
// items (commits, the body): ErrGone when one of them is past its TTL
// (DynamoDB deletes an expired run's items one by one, the head possibly
// first), else a *headError naming the first item found. A Query is read
// committed: one reading back from the body may miss the head of a run
// being created and see its first commit; the callers read again once.
func (w *store) headless(runID string, items []item) error {
	for _, it := range items {
		if w.expired(it) {
			return fmt.Errorf("%w: DynamoDB table %s: run %s has expired (its head item is deleted)", world.ErrGone, w.cfg.Table, runID)
		}
	}
	return &headError{table: w.cfg.Table, runID: runID, found: getS(items[0], attrSK)}
}

// expired reports whether an item of a run is past its TTL, so that its
// run's items may be missing because DynamoDB is deleting them: only on a
// World with Config.Retention, the only one whose runs get a ttl (like the
// claim-check rule): on a table without it, a ttl was set by hand, and the
// missing items are world.ErrCorrupt, not world.ErrGone.
func (w *store) expired(it item) bool {
	if w.cfg.Retention <= 0 {
		return false
	}
	ttl := getN(it, attrTTL)
	return ttl > 0 && ttl <= w.now().Unix()
}

// missingHead reports whether err is a *headError (read again once).
func missingHead(err error) bool {
	var h *headError
	return errors.As(err, &h)
}

// allSteps checks a listing of a run's steps whole in one page (n steps)
// against the count of steps of the run's newest commit, read before the
// step items (a step created since adds to the items, never to the
// count): fewer steps than counted means step items deleted behind the
// World, world.ErrCorrupt (world.ErrGone past the run's TTL: DynamoDB
// deletes an expired run's items one by one). Commits written before the
// count carry none: no check.
func (w *store) allSteps(runID string, newest item, n int) error {
	want := decodeStepCount(newest)
	if n >= want {
		return nil
	}
	if w.expired(newest) {
		return fmt.Errorf("%w: DynamoDB table %s: run %s has expired (its step items are being deleted)", world.ErrGone, w.cfg.Table, runID)
	}
	return fmt.Errorf("%w: DynamoDB table %s: run %s: %d of its %d step items are missing (its newest commit counts %d steps)",
		world.ErrCorrupt, w.cfg.Table, runID, want-n, want, want)
}
