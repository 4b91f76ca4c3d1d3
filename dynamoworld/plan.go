package dynamoworld

import (
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// The commit planner. planCommit turns a snapshot of a run and the events of
// one Append into the commit's transaction (its items, each with its
// condition), the payloads to upload first, the deletions of a run's end
// that follow it, and the snapshot the run has once the transaction lands.
// It does no I/O: whatever it lacks it asks for (planNeedRead,
// planNeedEndItems), and Append reads that and plans again. Its parts, one
// file a noun:
//
//	plan_judge.go   the events judged by world.Apply, in order
//	plan_steps.go   step items, lazy steps
//	plan_run.go     the commit item (the fence), the run head, body, idempotency key
//	attributes.go   the items of a run's attributes, for the index gs4
//	plan_waits.go   wait items
//	plan_hooks.go   hook, link and token items; a run's end's deletions
//	plan_chunk.go   the claim check, one write an item, the 100-item transaction
//
// Every assumption the plan makes about the table is a condition of its
// transaction (see doc.go, Commits), so a plan made on a stale snapshot
// cannot land.

// planInput is what one commit is planned from.
type planInput struct {
	snap     *snapshot
	runID    string
	events   []world.EventInput
	eventIDs []string // minted once per Append: a retried commit appends the same events
	now      time.Time
	tokens   *tokenInfo // what earlier attempts learned of hook tokens
	// ends: the run's hooks and waits as a query found them, for a commit
	// that ends the run; nil: not read.
	ends *runEndItems
	opts planOptions
}

// planOptions are the World's settings a plan depends on.
type planOptions struct {
	lazySteps bool          // the run cache is on: a new step may be lazy (its next commit knows it)
	retention time.Duration // Config.Retention: a run's end sets ttl
	cc        *claimCheck   // only its pure parts: payload keys and offload decisions
	limits    world.Limits  // Config.Limits with defaults: world.Apply checks them
}

// outcome is what the planner says of a commit.
type outcome int

const (
	planWrite        outcome = iota // write plan.ops
	planRefused                     // world.Apply refused an event (refusal)
	planNothing                     // every event was skipped: nothing to write
	planNeedRead                    // an event names an entity the snapshot does not know
	planNeedEndItems                // the commit ends the run: its entities must be read (runEndItems)
)

// planned is the planner's answer.
type planned struct {
	outcome outcome
	ref     *refusal // planRefused
	pl      *plan    // planWrite, planNothing
}

// runEndItems are the hooks (ID and token) and waits (IDs) of a run, as a
// query of its partition found them.
type runEndItems struct {
	hooks []*world.Hook
	waits []string
}

// planCommit plans one commit (see the top of this file).
func planCommit(in *planInput) (planned, error) {
	pl, ref, needRead := judge(in)
	switch {
	case needRead:
		return planned{outcome: planNeedRead}, nil
	case ref != nil:
		return planned{outcome: planRefused, ref: ref}, nil
	case len(pl.events) == 0:
		return planned{outcome: planNothing, pl: pl}, nil
	case pl.endsRun && in.ends == nil && !pl.created:
		// Even when the snapshot knows every hook and wait: the read
		// checks the entities' write marks (runEndItems). A run created
		// and ended in one commit has none.
		return planned{outcome: planNeedEndItems}, nil
	}
	pl.prev = lastSeqOf(pl.prevRun)
	if pl.run.Status.Terminal() && in.opts.retention > 0 {
		pl.ttl = pl.now.Add(in.opts.retention).Unix()
	}
	stepPuts, stepDiffs, err := planSteps(pl, in.opts.lazySteps)
	if err != nil {
		return planned{}, err
	}
	var ws writes
	ws.diffs = stepDiffs
	if err := planRun(pl, &ws, in.opts.cc); err != nil {
		return planned{}, err
	}
	if err := planAttributes(pl, &ws); err != nil {
		return planned{}, err
	}
	ws.puts = append(ws.puts, stepPuts...)
	planWaits(pl, &ws)
	ws.ops = append(ws.ops, planHooks(pl, in.tokens)...)
	if in.ends != nil {
		ws.ops = append(ws.ops, runEndDeletes(pl, in.ends)...)
	}
	if err := chunk(pl, &ws, in.opts.cc); err != nil {
		return planned{}, err
	}
	pl.next = nextSnapshot(pl)
	return planned{outcome: planWrite, pl: pl}, nil
}

// writes are a commit's item writes as the planner decides them, in the
// order the transaction lists them: the updates, then the puts, then the
// rest (deletions, checks, the hooks' puts).
type writes struct {
	diffs   []*diffPair
	puts    []*op
	ops     []*op
	uploads map[string][]byte // event payloads the commit item claim-checks
}

// change is one entity of a commit: as known before it (init), as the
// commit leaves it (final; nil when deleted or never created).
type change[T any] struct {
	init  *T
	final *T
	// assumed: init is nil because the entity was not known and the event
	// creates it; the write must check that it does not exist.
	assumed bool
	// created: an event of the commit created it, as made.
	created bool
	made    *T
	// leaseGuard: step_started on a step known running; its execution lease
	// may have been renewed without an event, so the write checks that the
	// lease is still initLease.
	leaseGuard bool
	initLease  time.Time
	// compGuard: comp_started on a step known compensating with an attempt
	// running (a takeover); that attempt's lease may have been renewed
	// without an event, so the write checks that it is still initCompLease.
	compGuard     bool
	initCompLease time.Time
}

func (c *change[T]) changed() bool { return c.init != c.final }

// plan is one commit: the events judged on a snapshot, the entities they
// change, and, once planned, the transaction and the next snapshot.
type plan struct {
	runID   string
	snap    *snapshot
	prevRun *world.Run
	run     *world.Run
	now     time.Time
	events  []world.Event
	results []world.EventResult
	steps   map[string]*change[world.Step]
	waits   map[string]*change[world.Wait]
	hooks   map[string]*change[world.Hook]
	// hookActs are the hook changes in event order; tokens is the commit's
	// view of the tokens it touched (nil: free).
	hookActs []hookAct
	tokens   map[string]*world.Hook
	idemKey  string
	created  bool
	endsRun  bool

	// Set by the planner after judging.
	prev int64 // the run's last sequence number before the commit: the commit item's key
	ttl  int64 // epoch seconds, on a run's end with Config.Retention
	// lazy is the commit's list of lazy steps (see lazy.go); bare its bare
	// steps known, madeBare those it makes bare (bare.go).
	lazy     map[string]int64
	bare     map[string]struct{}
	madeBare []string
	// nHooks, nWaits: the run's active hooks and waits after the commit;
	// nSteps its steps (-1: unknown).
	nHooks, nWaits, nSteps int
	// streamsChecked: the commit creates the run (its head says it has no
	// stream), or ends it on the condition that the head still says so.
	streamsChecked bool
	ops            []*op             // the transaction, at most maxTransactionItems
	overflow       []*op             // deletions of a run's end that follow it
	uploads        map[string][]byte // claim-checked payloads, uploaded before the transaction
	next           *snapshot         // the run once the transaction lands
}

// refusal is the state machine's refusal of event index.
type refusal struct {
	index int
	err   error
}

// tokenInfo is what a commit learned about hook tokens from earlier
// attempts: a live holder (append hook_conflict) or a stale one (the token
// item outlived its hook; take it over).
type tokenInfo struct {
	holders map[string]*world.Hook // token -> its live holder
	stale   map[string]string      // token -> the hook ID of a stale holder
}

// hookAct is one hook change of a commit, in event order: the hook items
// (global, run link, token) are written from these, merged per item.
type hookAct struct {
	kind   hookActKind
	hook   *world.Hook // created or disposed
	id     string      // conflict: the proposed hook ID
	token  string      // conflict: the token
	holder *world.Hook // conflict: the token's holder
	// assumed: the hook ID was not known; its absence is checked.
	assumed bool
}

type hookActKind int

const (
	actCreate hookActKind = iota
	actConflict
	actDispose
)

// counts returns the run's active hooks and waits after the commit: the
// snapshot's, plus those the commit creates, minus those it deletes (none
// after a run's end, which deletes them all).
func (pl *plan) counts() (hooks, waits int, err error) {
	if pl.endsRun {
		return 0, 0, nil // its end deletes them all
	}
	hooks, waits = pl.snap.nHooks, pl.snap.nWaits
	mine := func(h *world.Hook) int {
		if h != nil && h.RunID == pl.runID {
			return 1
		}
		return 0
	}
	for _, c := range pl.hooks {
		hooks += mine(c.final) - mine(c.init)
	}
	for _, c := range pl.waits {
		if c.final != nil {
			waits++
		}
		if c.init != nil {
			waits--
		}
	}
	if hooks < 0 || waits < 0 {
		return 0, 0, fmt.Errorf("dynamoworld: run %s: a commit would leave %d hooks and %d waits: the snapshot's counts are wrong", pl.runID, hooks, waits)
	}
	return hooks, waits, nil
}

// nextSnapshot is the run as the commit leaves it: the snapshot it was
// judged on with the commit's changes. It shares the snapshot's step IDs,
// to which Append adds the commit's new steps once it has landed.
func nextSnapshot(pl *plan) *snapshot {
	snap := pl.snap.clone()
	snap.blind = false
	snap.run = pl.run
	for id, c := range pl.steps {
		snap.steps[id] = c.final
	}
	snap.lazy = pl.lazy
	snap.bare = pl.bare
	snap.nHooks, snap.nWaits, snap.nSteps = pl.nHooks, pl.nWaits, pl.nSteps
	snap.endChecked = snap.endChecked || pl.endsRun && pl.streamsChecked
	for id, c := range pl.waits {
		snap.waits[id] = c.final
	}
	for id, c := range pl.hooks {
		if c.final == nil || c.final.RunID == pl.runID {
			snap.hooks[id] = c.final
		}
	}
	if pl.endsRun {
		clear(snap.hooks)
		clear(snap.waits)
	}
	return snap
}

// newSteps lists the steps the commit creates.
func (pl *plan) newSteps() []string {
	var ids []string
	for id, c := range pl.steps {
		if c.created {
			ids = append(ids, id)
		}
	}
	return ids
}

// result is what Append returns for a committed plan. Entities are copies:
// the plan's own values live on in the cache.
func (pl *plan) result() *world.AppendResult {
	res := &world.AppendResult{Run: cloneRun(pl.run), Results: make([]world.EventResult, len(pl.results))}
	for i, r := range pl.results {
		if r.Event != nil {
			ev := *r.Event
			r.Event = &ev
		}
		if r.Step != nil {
			r.Step = cloneStep(r.Step)
		}
		if r.Hook != nil {
			h := *r.Hook
			r.Hook = &h
		}
		if r.Wait != nil {
			wt := *r.Wait
			r.Wait = &wt
		}
		res.Results[i] = r
	}
	return res
}

func cloneRun(r *world.Run) *world.Run {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func lastSeqOf(r *world.Run) int64 {
	if r == nil {
		return 0
	}
	return r.LastSeq
}
