package dynamoworld

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinflow/skein/world"
)

// CachedSnapshot describes what w's cache holds of a run, for tests.
type CachedSnapshot struct {
	Cached, Complete    bool
	LastSeq             int64
	Steps, Waits, Hooks int // known, present
}

// Cached returns what w's cache holds of runID.
func Cached(w *World, runID string) CachedSnapshot {
	s := w.s.cache.get(runID)
	if s == nil || s.run == nil {
		return CachedSnapshot{}
	}
	cs := CachedSnapshot{Cached: true, Complete: s.complete, LastSeq: s.run.LastSeq}
	for _, st := range s.steps {
		if st != nil {
			cs.Steps++
		}
	}
	for _, wt := range s.waits {
		if wt != nil {
			cs.Waits++
		}
	}
	for _, h := range s.hooks {
		if h != nil {
			cs.Hooks++
		}
	}
	return cs
}

// CheckCached compares w's cached snapshot of runID with the run as a
// fresh read finds it (the run, its newest commit's lazy steps, and every
// step, wait and hook the snapshot or the run's log names), and describes
// the differences (and any broken invariant of the snapshot, see
// snapshot.check); "" when they agree, or when there is nothing cached or
// the run has moved on since. Step and compensation leases (and the update times and lazy
// steps a renewal changes) are compared only when withLeases: a renewal
// changes them without an event.
func CheckCached(ctx context.Context, w *World, runID string, withLeases bool) (string, error) {
	snap := w.s.cache.get(runID)
	if snap == nil || snap.run == nil {
		return "", nil
	}
	var log []world.Event
	for cursor := ""; ; {
		p, err := w.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Cursor: cursor, Limit: world.MaxPageLimit}})
		if err != nil {
			return "", err
		}
		log = append(log, p.Items...)
		if !p.HasMore {
			break
		}
		cursor = p.Cursor
	}
	var keys []itemKey
	seen := map[itemKey]bool{}
	addKey := func(k itemKey) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, ev := range log {
		switch ev.Data.(type) {
		case *world.StepCreated:
			addKey(stepKey(runID, ev.CorrelationID))
		case *world.WaitCreated:
			addKey(waitKey(runID, ev.CorrelationID))
		case *world.HookCreated:
			addKey(hookLinkKey(runID, ev.CorrelationID))
		}
	}
	// Counted before the read, which tells whether the run moved on since.
	hooks, err := w.s.queryAll(ctx, runPK(runID), prefHook, true)
	if err != nil {
		return "", err
	}
	waits, err := w.s.queryAll(ctx, runPK(runID), prefWait, true)
	if err != nil {
		return "", err
	}
	nh, nw := len(hooks), len(waits)
	fresh, err := w.s.load(ctx, runID, keys, nil)
	if err != nil {
		return "", err
	}
	if fresh.run == nil || fresh.run.LastSeq != snap.run.LastSeq {
		return "", nil // moved on
	}
	var diffs []string
	if err := snap.check(); err != nil {
		diffs = append(diffs, "invariant "+err.Error())
	}
	cmp := func(what string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			diffs = append(diffs, fmt.Sprintf("%s: cached %s, read %s", what, ja, jb))
		}
	}
	cmp("run", snap.run, fresh.run)
	if withLeases { // a renewal writes a lazy step's item, which drops it from the list
		cmp("lazy steps", snap.lazy, fresh.lazy)
	}
	for _, k := range keys {
		switch id := k.sk[2:]; {
		case strings.HasPrefix(k.sk, prefStep):
			got, ok := snap.steps[id] // a step may be missing: known to be unknown
			want := fresh.steps[id]
			if ok && got != nil && want != nil && !withLeases {
				g, f := *got, *want
				g.LeaseExpiresAt, g.UpdatedAt = f.LeaseExpiresAt, f.UpdatedAt
				if g.Compensation != nil && f.Compensation != nil { // so does a compensation's renewal
					gc := *g.Compensation
					gc.LeaseExpiresAt = f.Compensation.LeaseExpiresAt
					g.Compensation = &gc
				}
				got, want = &g, &f
			}
			if ok {
				cmp("step "+id, got, want)
			}
		case strings.HasPrefix(k.sk, prefWait):
			if got, ok := snap.waits[id]; ok || snap.complete {
				cmp("wait "+id, got, fresh.waits[id])
			}
		case strings.HasPrefix(k.sk, prefHook):
			if got, ok := snap.hooks[id]; ok || snap.complete {
				cmp("hook "+id, got, fresh.hooks[id])
			}
		}
	}
	// (An ended run's deletions may follow its commit.)
	if !snap.run.Status.Terminal() && (nh != snap.nHooks || nw != snap.nWaits) {
		diffs = append(diffs, fmt.Sprintf("counts: cached %d hooks and %d waits, read %d and %d", snap.nHooks, snap.nWaits, nh, nw))
	}
	if snap.complete {
		for id, h := range snap.hooks {
			if h != nil && !seen[hookLinkKey(runID, id)] {
				diffs = append(diffs, "hook "+id+" cached, not in the log")
			}
		}
		for id, wt := range snap.waits {
			if wt != nil && !seen[waitKey(runID, id)] {
				diffs = append(diffs, "wait "+id+" cached, not in the log")
			}
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; "), nil
}

// AbandonClaim returns worldtest.Subject.AbandonClaim for w: it claims an
// idempotency key as Enqueue does before its send, and sends nothing (a
// sender killed between the two).
func AbandonClaim(w *World) func(ctx context.Context, key string) error {
	return func(ctx context.Context, key string) error {
		dup, _, err := w.s.claimKey(ctx, key, w.s.ids.New(world.PrefixMsg), w.s.now())
		if err == nil && dup != "" {
			return fmt.Errorf("key %q already stands for message %s", key, dup)
		}
		return err
	}
}

// WaitStored reports whether w's table holds an item for the wait waitID of
// runID (a run's end deletes its waits' items), read strongly consistent.
func WaitStored(ctx context.Context, w *World, runID, waitID string) (bool, error) {
	if err := w.s.enter(ctx); err != nil {
		return false, err
	}
	defer w.s.leave()
	it, err := w.s.getItem(ctx, waitKey(runID, waitID))
	return it != nil, err
}

// IndexShards is how many values each shared index key is spread over.
const IndexShards = indexShards
