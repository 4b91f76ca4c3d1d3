package dynamoworld

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// The planner's tests: a snapshot and the events of one Append in, the
// planner's outcome and the transaction's writes, each with its condition,
// out (see describeOp for the notation). No I/O, no World.

var (
	planT0    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	planRunID = pid(world.PrefixRun, "R")
	// idPattern finds the IDs pid makes, to write them back as their names.
	idPattern = regexp.MustCompile(`(?:wrun|step|hook|wait|evnt)_01J0*([1-9A-Z][0-9A-Z]*)`)
)

// pid is a valid ID named name (Crockford base32 letters, not starting
// with 0), which describeOps writes as name; "" stays "".
func pid(prefix, name string) string {
	if name == "" {
		return ""
	}
	return prefix + "01J" + strings.Repeat("0", 23-len(name)) + name
}

func st(name string) string { return pid(world.PrefixStep, name) }
func wt(name string) string { return pid(world.PrefixWait, name) }
func hk(name string) string { return pid(world.PrefixHook, name) }

// planLog folds events, as a World that made every commit of the run would
// know it: a complete snapshot with every step ID, counted; lazy names the
// steps its newest commit lists without an item.
func planLog(t *testing.T, lazy map[string]int64, evs ...world.EventInput) *snapshot {
	t.Helper()
	snap := newSnapshot(nil)
	snap.complete, snap.stepIDs, snap.streams, snap.mayBare = true, newIDSet(), streamsNone, true
	for i, in := range evs {
		ev := world.Event{RunID: planRunID, EventID: pid(world.PrefixEvent, fmt.Sprintf("N%d", i+1)), Seq: int64(i + 1), CorrelationID: in.CorrelationID, CreatedAt: planT0, Data: in.Data}
		if err := snap.fold(ev); err != nil {
			t.Fatal(err)
		}
	}
	snap.nHooks, snap.nWaits = live(snap.hooks), live(snap.waits)
	for name, prev := range lazy {
		snap.lazy[st(name)] = prev
	}
	if err := snap.check(); err != nil {
		t.Fatal(err)
	}
	return snap
}

// read is s as a fresh read of the run finds it (load): neither complete
// nor with the run's step IDs; only the entities named are known.
func read(s *snapshot, known ...string) *snapshot {
	r := s.clone()
	r.complete, r.stepIDs = false, nil
	clear(r.steps)
	clear(r.waits)
	clear(r.hooks)
	for _, name := range known {
		if v, ok := s.steps[st(name)]; ok {
			r.steps[st(name)] = v
		}
		if v, ok := s.waits[wt(name)]; ok {
			r.waits[wt(name)] = v
		}
		if v, ok := s.hooks[hk(name)]; ok {
			r.hooks[hk(name)] = v
		}
	}
	return r
}

func ein(corr string, d world.EventData) world.EventInput {
	return world.EventInput{CorrelationID: corr, Data: d}
}

var (
	runCreated  = ein("", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "k1"})
	runStarted  = ein("", &world.RunStarted{})
	runDone     = ein("", &world.RunCompleted{Output: json.RawMessage(`1`)})
	payload     = json.RawMessage(`{"x":1}`)
	stepCreated = func(name string) world.EventInput {
		return ein(st(name), &world.StepCreated{StepName: "s", Input: payload})
	}
	stepStarted = func(name string) world.EventInput { return ein(st(name), &world.StepStarted{LeaseTTL: time.Minute}) }
	stepDone    = func(name string) world.EventInput { return ein(st(name), &world.StepCompleted{Result: payload}) }
	waitCreated = func(name string) world.EventInput {
		return ein(wt(name), &world.WaitCreated{ResumeAt: planT0.Add(time.Hour)})
	}
	waitDone    = func(name string) world.EventInput { return ein(wt(name), &world.WaitCompleted{}) }
	hookCreated = func(name, token string) world.EventInput { return ein(hk(name), &world.HookCreated{Token: token}) }
	hookGone    = func(name string) world.EventInput { return ein(hk(name), &world.HookDisposed{}) }
)

// started is a running run (created and started, 2 events).
func started(t *testing.T, evs ...world.EventInput) *snapshot {
	return planLog(t, nil, append([]world.EventInput{runCreated, runStarted}, evs...)...)
}

func TestPlanCommit(t *testing.T) {
	t.Parallel()
	holder := &world.Hook{HookID: hk("HX"), RunID: pid(world.PrefixRun, "RX"), Token: "tk", CreatedAt: planT0}
	for _, tc := range []struct {
		name   string
		snap   func(t *testing.T) *snapshot
		events []world.EventInput
		tokens *tokenInfo
		ends   *runEndItems
		now    time.Duration // after planT0
		noLazy bool          // the run cache is off

		outcome   outcome
		refused   error  // planRefused: the refusal matches it (errors.Is)
		refusedIn string // and is a *world.RefusalError whose message holds this
		refusedAt int    // and is of this event
		writes    []string
		overflow  int
		next      func(t *testing.T, s *snapshot)
	}{
		{
			name: "run created on a blind snapshot", snap: func(*testing.T) *snapshot { return blindSnapshot() },
			events: []world.EventInput{runCreated, runStarted}, outcome: planWrite,
			writes: []string{"put commit@0 if attribute_not_exists(sk)", "put e~ if attribute_not_exists(pk)", "put e~b if attribute_not_exists(pk)", "put idem:k1 if attribute_not_exists(pk)"},
			next: func(t *testing.T, s *snapshot) {
				if s.blind || !s.complete || s.run.LastSeq != 2 || s.streams != streamsNone {
					t.Errorf("next: blind %v, complete %v, last %d, streams %v", s.blind, s.complete, s.run.LastSeq, s.streams)
				}
			},
		},
		{
			name: "a serial step: the commit alone, the step bare, the next step lazy",
			snap: func(t *testing.T) *snapshot {
				return planLog(t, map[string]int64{"A": 2}, runCreated, runStarted, stepCreated("A"), stepStarted("A"))
			},
			events:  []world.EventInput{stepDone("A"), stepCreated("B"), stepStarted("B")},
			outcome: planWrite,
			writes:  []string{"put commit@4 if attribute_not_exists(sk)"},
			next: func(t *testing.T, s *snapshot) {
				if !maps2Equal(s.lazy, map[string]int64{st("B"): 4}) || s.steps[st("B")] == nil || s.steps[st("A")].Status != world.StepStatusCompleted {
					t.Errorf("next: lazy %v, steps %v", s.lazy, s.steps)
				}
				if _, bare := s.bare[st("A")]; !bare || !s.mayBare || s.check() != nil {
					t.Errorf("next: bare %v, mayBare %v, check %v", s.bare, s.mayBare, s.check())
				}
			},
		},
		{
			name: "a bare step changed again: its first item, on its absence",
			snap: func(t *testing.T) *snapshot {
				s := planLog(t, nil, runCreated, runStarted, ein(st("A"), &world.StepCreated{StepName: "s", Compensation: "undo"}), stepStarted("A"), stepDone("A"))
				s.bare, s.mayBare = map[string]struct{}{st("A"): {}}, true
				return s
			},
			events:  []world.EventInput{{CorrelationID: st("A"), Data: &world.CompStarted{}}},
			outcome: planWrite,
			writes:  []string{"put commit@5 if attribute_not_exists(sk)", "put s#A if attribute_not_exists(pk)"},
			next: func(t *testing.T, s *snapshot) {
				if len(s.bare) != 0 || !s.mayBare {
					t.Errorf("next: bare %v, mayBare %v", s.bare, s.mayBare)
				}
			},
		},
		{
			name: "a lazy step taken over: its first item, on its lease record",
			snap: func(t *testing.T) *snapshot {
				return planLog(t, map[string]int64{"A": 2}, runCreated, runStarted, stepCreated("A"), stepStarted("A"))
			},
			now:     time.Hour,
			events:  []world.EventInput{stepStarted("A")},
			outcome: planWrite,
			writes:  []string{"put commit@4 if attribute_not_exists(sk)", "put s#A if attribute_not_exists(pk)", "check x#A if attribute_not_exists(sk) OR lx <= " + fmt.Sprint(planT0.Add(time.Minute).UnixNano())},
		},
		{
			name: "a new step on a read snapshot of a run with bare steps: read the log",
			snap: func(t *testing.T) *snapshot {
				s := read(started(t), "A")
				s.mayBare = true
				return s
			},
			events:  []world.EventInput{stepCreated("B"), stepStarted("B")},
			outcome: planNeedRead,
		},
		{
			name: "a serial step without the cache: every step written",
			snap: func(t *testing.T) *snapshot {
				return started(t, stepCreated("A"), stepStarted("A"))
			},
			events: []world.EventInput{stepDone("A"), stepCreated("B"), stepStarted("B")}, noLazy: true,
			outcome: planWrite,
			writes:  []string{"update s#A if (attribute_not_exists(wq) OR wq <= 4)", "put commit@4 if attribute_not_exists(sk)", "put s#B if attribute_not_exists(pk)"},
		},
		{
			name: "a serial step on a fresh read of a version 1 run: the new step's absence is a condition",
			snap: func(t *testing.T) *snapshot {
				s := read(started(t, stepCreated("A"), stepStarted("A")), "A", "B")
				s.mayBare = false // no bare step: an absent item is absence
				return s
			},
			events:  []world.EventInput{stepDone("A"), stepCreated("C"), stepStarted("C")},
			outcome: planWrite,
			writes:  []string{"update s#A if (attribute_not_exists(wq) OR wq <= 4)", "put commit@4 if attribute_not_exists(sk)", "put s#C if attribute_not_exists(pk)"},
		},
		{
			name:    "at most four lazy steps",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{stepCreated("A"), stepStarted("A"), stepCreated("B"), stepStarted("B"), stepCreated("C"), stepStarted("C"), stepCreated("D"), stepStarted("D"), stepCreated("E"), stepStarted("E")},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "put s#E if attribute_not_exists(pk)"},
			next: func(t *testing.T, s *snapshot) {
				if len(s.lazy) != maxLazySteps {
					t.Errorf("next: lazy %v", s.lazy)
				}
			},
		},
		{
			name:    "a step created but not started has its item",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{stepCreated("A")},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "put s#A if attribute_not_exists(pk)"},
		},
		{
			name:    "step_started on a running step whose lease expired: the lease it judged is a condition",
			snap:    func(t *testing.T) *snapshot { return started(t, stepCreated("A"), stepStarted("A")) },
			events:  []world.EventInput{stepStarted("A")},
			now:     2 * time.Minute,
			outcome: planWrite,
			writes:  []string{fmt.Sprintf("update s#A if (lx = %d) AND (attribute_not_exists(wq) OR wq <= 4)", planT0.Add(time.Minute).UnixNano()), "put commit@4 if attribute_not_exists(sk)"},
		},
		{
			name:    "refused: step_started on a leased step",
			snap:    func(t *testing.T) *snapshot { return started(t, stepCreated("A"), stepStarted("A")) },
			events:  []world.EventInput{stepStarted("A")},
			outcome: planRefused, refused: world.ErrConflict, refusedIn: "attempt 1 is running under a lease",
		},
		{
			name:    "refused: a step completed twice",
			snap:    func(t *testing.T) *snapshot { return started(t, stepCreated("A"), stepStarted("A"), stepDone("A")) },
			events:  []world.EventInput{stepDone("A")},
			outcome: planRefused, refused: world.ErrConflict, refusedIn: " refused: ",
		},
		{
			name:    "refused: a step created twice",
			snap:    func(t *testing.T) *snapshot { return started(t, stepCreated("A")) },
			events:  []world.EventInput{stepCreated("A")},
			outcome: planRefused, refused: world.ErrConflict, refusedIn: " refused: ",
		},
		{
			name:    "refused: a step the complete snapshot does not have",
			snap:    func(t *testing.T) *snapshot { s := started(t); s.steps[st("A")] = nil; return s },
			events:  []world.EventInput{stepDone("A")},
			outcome: planRefused, refused: world.ErrNotFound, refusedIn: " refused: ",
		},
		{
			name:    "refused: run_created on an existing run",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{runCreated},
			outcome: planRefused, refused: world.ErrConflict, refusedIn: "run already exists",
		},
		{
			name:    "refused: a step on a finished run",
			snap:    func(t *testing.T) *snapshot { return started(t, runDone) },
			events:  []world.EventInput{stepCreated("A")},
			outcome: planRefused, refused: world.ErrConflict, refusedIn: " refused: ",
		},
		{
			name:    "refused: an event without its correlation ID",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{stepCreated("")},
			outcome: planRefused, refused: world.ErrInvalid,
		},
		{
			name:    "refused: a step of a run that does not exist",
			snap:    func(*testing.T) *snapshot { return newSnapshot(nil) },
			events:  []world.EventInput{stepCreated("A")},
			outcome: planRefused, refused: world.ErrNotFound,
		},
		{
			name:    "refused: the second event, on what the first left",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{stepCreated("A"), stepCreated("A")},
			outcome: planRefused, refused: world.ErrConflict, refusedAt: 1,
		},
		{
			name:    "nothing to write: run_started on a running run",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{runStarted},
			outcome: planNothing,
		},
		{
			name:    "needs a read: a step the snapshot does not know",
			snap:    func(t *testing.T) *snapshot { return read(started(t, stepCreated("A"))) },
			events:  []world.EventInput{stepDone("A")},
			outcome: planNeedRead,
		},
		{
			name: "needs a read: a lazy step whose state the snapshot lacks",
			snap: func(t *testing.T) *snapshot {
				s := read(started(t, stepCreated("A"), stepStarted("A")))
				s.lazy[st("A")] = 2
				return s
			},
			events:  []world.EventInput{stepDone("A")},
			outcome: planNeedRead,
		},
		{
			name:    "needs a read: a blind snapshot for an event that does not create the run",
			snap:    func(*testing.T) *snapshot { return blindSnapshot() },
			events:  []world.EventInput{runStarted},
			outcome: planNeedRead,
		},
		{
			name:    "a wait created",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{waitCreated("W")},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "put w#W if attribute_not_exists(pk)"},
			next: func(t *testing.T, s *snapshot) {
				if s.nWaits != 1 {
					t.Errorf("next: %d waits", s.nWaits)
				}
			},
		},
		{
			name:    "a wait completed",
			snap:    func(t *testing.T) *snapshot { return started(t, waitCreated("W")) },
			events:  []world.EventInput{waitDone("W")},
			outcome: planWrite,
			writes:  []string{"update w#W if (attribute_not_exists(wq) OR wq <= 3)", "put commit@3 if attribute_not_exists(sk)"},
		},
		{
			name:    "a hook created: three items on their absence",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{hookCreated("H", "tk")},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "put hook:H if attribute_not_exists(pk)", "put h#H if attribute_not_exists(pk)", "put token:tk if attribute_not_exists(pk)"},
			next: func(t *testing.T, s *snapshot) {
				if s.nHooks != 1 || s.hooks[hk("H")] == nil {
					t.Errorf("next: %d hooks, %v", s.nHooks, s.hooks)
				}
			},
		},
		{
			name:    "a hook created on a token a finished run left: taken over",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{hookCreated("H", "tk")},
			tokens:  &tokenInfo{stale: map[string]string{"tk": hk("HZ")}},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "put hook:H if attribute_not_exists(pk)", "put h#H if attribute_not_exists(pk)", "put token:tk if attribute_not_exists(pk) OR hid = HZ"},
		},
		{
			name:    "a hook created on a token another run's hook holds: hook_conflict",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{hookCreated("H", "tk")},
			tokens:  &tokenInfo{holders: map[string]*world.Hook{"tk": holder}},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "check hook:H if attribute_not_exists(pk)", "check token:tk if hid = HX"},
			next: func(t *testing.T, s *snapshot) {
				if s.nHooks != 0 || s.hooks[hk("H")] != nil {
					t.Errorf("next: %d hooks, %v", s.nHooks, s.hooks)
				}
			},
		},
		{
			name:    "a hook disposed: its three items deleted",
			snap:    func(t *testing.T) *snapshot { return started(t, hookCreated("H", "tk")) },
			events:  []world.EventInput{hookGone("H")},
			outcome: planWrite,
			writes:  []string{"put commit@3 if attribute_not_exists(sk)", "delete hook:H", "delete h#H", "delete token:tk if attribute_not_exists(pk) OR hid = H"},
		},
		{
			name:    "a hook created and disposed in one commit: one write an item",
			snap:    func(t *testing.T) *snapshot { return started(t) },
			events:  []world.EventInput{hookCreated("H", "tk"), hookGone("H")},
			outcome: planWrite,
			writes:  []string{"put commit@2 if attribute_not_exists(sk)", "delete hook:H if attribute_not_exists(pk)", "delete h#H if attribute_not_exists(pk)", "delete token:tk if attribute_not_exists(pk)"},
		},
		{
			name:    "the run's end, its hooks and waits known: deleted after the core, the no-stream belief checked",
			snap:    func(t *testing.T) *snapshot { return started(t, hookCreated("H", "tk"), waitCreated("W")) },
			events:  []world.EventInput{runDone},
			ends:    &runEndItems{hooks: []*world.Hook{{HookID: hk("H"), Token: "tk"}}, waits: []string{wt("W")}},
			outcome: planWrite,
			writes:  []string{"update e~ if os = 0", "update e~b", "put commit@4 if attribute_not_exists(sk)", "delete w#W", "delete hook:H", "delete h#H", "delete token:tk if attribute_not_exists(pk) OR hid = H"},
			next: func(t *testing.T, s *snapshot) {
				if !s.endChecked || s.nHooks != 0 || s.nWaits != 0 || len(s.hooks)+len(s.waits) != 0 {
					t.Errorf("next: end checked %v, counts %d %d, %v %v", s.endChecked, s.nHooks, s.nWaits, s.hooks, s.waits)
				}
			},
		},
		{
			name:    "the run's end, its hooks and waits known: needs the run's entities all the same (their marks)",
			snap:    func(t *testing.T) *snapshot { return started(t, hookCreated("H", "tk"), waitCreated("W")) },
			events:  []world.EventInput{runDone},
			outcome: planNeedEndItems,
		},
		{
			name:    "the run's end, a wait not known: needs the run's hooks and waits",
			snap:    func(t *testing.T) *snapshot { return read(started(t, waitCreated("W"))) },
			events:  []world.EventInput{runDone},
			outcome: planNeedEndItems,
		},
		{
			name:    "the run's end with the hooks and waits a query found",
			snap:    func(t *testing.T) *snapshot { return read(started(t, waitCreated("W"), hookCreated("H", "tk"))) },
			events:  []world.EventInput{runDone},
			ends:    &runEndItems{hooks: []*world.Hook{{HookID: hk("H"), Token: "tk"}}, waits: []string{wt("W")}},
			outcome: planWrite,
			writes:  []string{"update e~ if os = 0", "update e~b", "put commit@4 if attribute_not_exists(sk)", "delete hook:H", "delete h#H", "delete token:tk if attribute_not_exists(pk) OR hid = H", "delete w#W"},
		},
		{
			name:    "the run's end with no hooks or waits left: nothing to delete",
			snap:    func(t *testing.T) *snapshot { return read(started(t, hookCreated("H", "tk"), hookGone("H"))) },
			events:  []world.EventInput{runDone},
			ends:    &runEndItems{},
			outcome: planWrite,
			writes:  []string{"update e~ if os = 0", "update e~b", "put commit@4 if attribute_not_exists(sk)"},
		},
		{
			name: "the run's end, a stream opened: no condition on the flag",
			snap: func(t *testing.T) *snapshot {
				s := started(t)
				s.streams = streamsSome
				return s
			},
			events:  []world.EventInput{runDone},
			ends:    &runEndItems{},
			outcome: planWrite,
			writes:  []string{"update e~", "update e~b", "put commit@2 if attribute_not_exists(sk)"},
			next: func(t *testing.T, s *snapshot) {
				if s.endChecked {
					t.Error("next: end checked")
				}
			},
		},
		{
			name: "the run's end beyond one transaction: the rest of its deletions follow",
			snap: func(t *testing.T) *snapshot {
				s := read(started(t))
				s.nHooks = 40
				return s
			},
			events: []world.EventInput{runDone},
			ends: func() *runEndItems {
				e := &runEndItems{}
				for i := range 40 {
					e.hooks = append(e.hooks, &world.Hook{HookID: hk(fmt.Sprintf("H%02d", i)), Token: fmt.Sprintf("tk%02d", i)})
				}
				return e
			}(),
			outcome: planWrite, overflow: 3*40 - (maxTransactionItems - 3),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := tc.snap(t)
			in := &planInput{
				snap: snap, runID: planRunID, events: tc.events, now: planT0.Add(tc.now), tokens: tc.tokens, ends: tc.ends,
				opts: planOptions{lazySteps: !tc.noLazy, cc: &claimCheck{prefix: "p/", threshold: DefaultClaimCheckThreshold}},
			}
			for i := range tc.events {
				in.eventIDs = append(in.eventIDs, pid(world.PrefixEvent, fmt.Sprintf("M%d", i+1)))
			}
			pd, err := planCommit(in)
			if err != nil {
				t.Fatalf("planCommit: %v", err)
			}
			if pd.outcome != tc.outcome {
				t.Fatalf("outcome %d (%v), want %d", pd.outcome, pd.ref, tc.outcome)
			}
			switch tc.outcome {
			case planRefused:
				var re *world.RefusalError
				if !errors.Is(pd.ref.err, tc.refused) || tc.refusedIn != "" && (!errors.As(pd.ref.err, &re) || !strings.Contains(re.Error(), tc.refusedIn)) || pd.ref.index != tc.refusedAt {
					t.Fatalf("refusal of event %d: %T %v, want event %d: %v (%q)", pd.ref.index, pd.ref.err, pd.ref.err, tc.refusedAt, tc.refused, tc.refusedIn)
				}
			case planWrite:
				pl := pd.pl
				if tc.writes != nil {
					got := describeOps(pl.ops, tc.events)
					if !slices.Equal(got, tc.writes) {
						t.Errorf("writes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.writes, "\n  "))
					}
				}
				if len(pl.overflow) != tc.overflow || len(pl.ops) > maxTransactionItems {
					t.Errorf("%d writes and %d following, want %d following", len(pl.ops), len(pl.overflow), tc.overflow)
				}
				if err := pl.next.check(); err != nil {
					t.Errorf("next snapshot: %v", err)
				}
				if pl.next.run.LastSeq != lastSeqOf(snap.run)+int64(len(pl.events)) {
					t.Errorf("next snapshot at %d, want %d", pl.next.run.LastSeq, lastSeqOf(snap.run)+int64(len(pl.events)))
				}
				if tc.next != nil {
					tc.next(t, pl.next)
				}
			}
		})
	}
}
