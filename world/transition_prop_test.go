package world_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/skeinflow/skein/world"
)

// The property tests drive world.Apply (through propStore, the smallest
// storage around it) with random sequences of commits on two runs, a few
// steps, hooks and waits, and a clock that moves, and hold it to propModel:
// every event is accepted, skipped or refused as the model's refusal table
// says, with the model's effect. Two writers may race: both fence their
// commit with the same IfLastSeq, and exactly one of them wins (the fence
// is the Worlds'; the tests model it as they implement it). After every
// step the invariants hold, whatever the model says: dense sequence
// numbers, at most one terminal event per run (exactly one once it has
// ended), no transition out of a terminal state (a run's, a step's, a
// wait's), and every token held by one active hook at most.

// The universe: two runs, steps and waits by ID within a run, hooks with
// IDs of their own run (hook IDs are unique across runs), shared tokens.
func propRuns() []string { return []string{runID, otherID, thirdID} }

const thirdID = "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAX"

func propID(prefix string, i int) string {
	return fmt.Sprintf("%s01ARZ3NDEKTSV4RRFFQ69G5FA%d", prefix, i)
}

func propCorr(t *rapid.T, et world.EventType, run string) string {
	switch et {
	case world.EventHookCreated, world.EventHookConflict, world.EventHookReceived, world.EventHookDisposed:
		base := 0
		for i, r := range propRuns() {
			if r == run {
				base = 2 * i
			}
		}
		return propID(world.PrefixHook, base+rapid.IntRange(0, 1).Draw(t, "hook"))
	case world.EventWaitCreated, world.EventWaitCompleted:
		return propID(world.PrefixWait, rapid.IntRange(0, 1).Draw(t, "wait"))
	}
	if world.IsStepEvent(et) {
		return propID(world.PrefixStep, rapid.IntRange(0, 1).Draw(t, "step"))
	}
	return ""
}

// propEventTypes lists the event types to draw from, each as often as it
// should be drawn: the run's end rarely enough that runs live a while.
func propEventTypes() []world.EventType {
	weights := []struct {
		t world.EventType
		n int
	}{
		{world.EventRunCreated, 1}, {world.EventRunStarted, 2},
		{world.EventRunCompleted, 1}, {world.EventRunFailed, 1}, {world.EventRunCancelled, 1}, {world.EventRunHeld, 2},
		{world.EventStepCreated, 4}, {world.EventStepStarted, 6}, {world.EventStepCompleted, 4}, {world.EventStepFailed, 2}, {world.EventStepRetrying, 3},
		{world.EventHookCreated, 4}, {world.EventHookConflict, 1}, {world.EventHookReceived, 3}, {world.EventHookDisposed, 2},
		{world.EventWaitCreated, 3}, {world.EventWaitCompleted, 3},
		{world.EventAttributeSet, 3},
		{world.EventRunDeactivated, 2}, {world.EventRunCleanedUp, 2},
		{world.EventCompStarted, 4}, {world.EventCompRetryScheduled, 2}, {world.EventCompSucceeded, 3}, {world.EventCompFailed, 1},
	}
	var out []world.EventType
	for _, w := range weights {
		for range w.n {
			out = append(out, w.t)
		}
	}
	return out
}

// propEvent draws one event for run at now; a run that does not exist yet
// is mostly created.
func propEvent(t *rapid.T, run string, exists bool, now time.Time) propOp {
	et := world.EventRunCreated
	if exists || rapid.IntRange(0, 3).Draw(t, "create") == 0 {
		et = rapid.SampledFrom(propEventTypes()).Draw(t, "type")
	}
	o := propOp{run: run, corr: propCorr(t, et, run)}
	fail := &world.ErrorData{Message: "boom"}
	one := json.RawMessage(`1`)
	switch et {
	case world.EventRunCreated:
		o.data = &world.RunCreated{WorkflowName: "wf", IdempotencyKey: rapid.SampledFrom([]string{"", "", "k1", "k2"}).Draw(t, "idem")}
	case world.EventRunStarted:
		o.data = &world.RunStarted{}
	case world.EventRunCompleted:
		o.data = &world.RunCompleted{Output: one, Cleanup: rapid.Bool().Draw(t, "cleanup")}
	case world.EventRunDeactivated:
		o.data = &world.RunDeactivated{}
	case world.EventRunCleanedUp:
		var e *world.ErrorData
		if rapid.Bool().Draw(t, "cleanupFailed") {
			e = fail
		}
		o.data = &world.RunCleanedUp{Error: e}
	case world.EventRunFailed:
		// Now and then without the error it requires: invalid.
		if o.invalid = rapid.IntRange(0, 9).Draw(t, "malformed") == 0; o.invalid {
			fail = nil
		}
		o.data = &world.RunFailed{Error: fail, ErrorCode: "USER_ERROR", Compensate: rapid.Bool().Draw(t, "compensate")}
	case world.EventRunCancelled:
		o.data = &world.RunCancelled{Reason: "prop", Compensate: rapid.Bool().Draw(t, "compensate")}
	case world.EventRunHeld:
		// Now and then without the error code it requires: invalid.
		code := world.CodeReplayDivergence
		if o.invalid = rapid.IntRange(0, 9).Draw(t, "malformed") == 0; o.invalid {
			code = ""
		}
		o.data = &world.RunHeld{Error: fail, ErrorCode: code, Attempt: rapid.IntRange(1, 3).Draw(t, "attempt"), RetryAt: now.Add(time.Minute)}
	case world.EventStepCreated:
		o.data = &world.StepCreated{StepName: "s", Input: one, Compensation: rapid.SampledFrom([]string{"", "undo", "undo"}).Draw(t, "compensation")}
	case world.EventStepStarted:
		o.data = &world.StepStarted{StepName: "s", LeaseTTL: rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(t, "lease")}
	case world.EventStepCompleted:
		o.data = &world.StepCompleted{StepName: "s", Result: one}
	case world.EventStepFailed:
		o.data = &world.StepFailed{StepName: "s", Error: fail}
	case world.EventStepRetrying:
		after := rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 3 * time.Minute}).Draw(t, "retry")
		o.data = &world.StepRetrying{StepName: "s", Error: fail, RetryAfter: now.Add(after)}
	case world.EventHookCreated:
		o.data = &world.HookCreated{Token: rapid.SampledFrom([]string{"tok-a", "tok-b"}).Draw(t, "token")}
	case world.EventHookConflict:
		o.data = &world.HookConflict{Token: "tok-a"}
	case world.EventHookReceived:
		o.data = &world.HookReceived{Payload: one}
	case world.EventHookDisposed:
		o.data = &world.HookDisposed{}
	case world.EventWaitCreated:
		o.data = &world.WaitCreated{ResumeAt: now.Add(time.Minute)}
	case world.EventWaitCompleted:
		o.data = &world.WaitCompleted{}
	case world.EventCompStarted, world.EventCompRetryScheduled, world.EventCompSucceeded, world.EventCompFailed:
		o.data, o.invalid = propCompEvent(t, et, now)
	case world.EventAttributeSet:
		// Keys from a universe larger than a run may hold, so that the
		// bound is reached; now and then an invalid key.
		attrs := map[string]string{}
		for range rapid.IntRange(1, 6).Draw(t, "attrs") {
			attrs[propAttrKey(rapid.IntRange(0, propAttrKeys-1).Draw(t, "key"))] = rapid.SampledFrom([]string{"x", "y"}).Draw(t, "value")
		}
		if o.invalid = rapid.IntRange(0, 19).Draw(t, "malformed") == 0; o.invalid {
			attrs["bad key"] = "x"
		}
		o.data = &world.AttributeSet{Attributes: attrs}
	}
	return o
}

// propCompEvent draws a comp_* event; now and then comp_failed lacks the
// error it requires (invalid).
func propCompEvent(t *rapid.T, et world.EventType, now time.Time) (world.EventData, bool) {
	fail := &world.ErrorData{Message: "undo failed"}
	switch et {
	case world.EventCompStarted:
		return &world.CompStarted{LeaseTTL: rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(t, "compLease")}, false
	case world.EventCompRetryScheduled:
		after := rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 3 * time.Minute}).Draw(t, "compRetry")
		return &world.CompRetryScheduled{Error: fail, RetryAfter: now.Add(after)}, false
	case world.EventCompSucceeded:
		return &world.CompSucceeded{}, false
	}
	if rapid.IntRange(0, 9).Draw(t, "malformed") == 0 {
		return &world.CompFailed{}, true
	}
	return &world.CompFailed{Error: fail}, false
}

// propAttrKeys is the number of attribute keys the tests draw from.
const propAttrKeys = world.MaxAttributes + 4

func propAttrKey(i int) string { return fmt.Sprintf("k%02d", i) }

// propMachine is the state machine rapid drives.
type propMachine struct {
	store *propStore
	model *propModel
	now   time.Time
	// ended remembers the terminal states seen, to check they last.
	runEnded  map[string]world.RunStatus
	stepEnded map[string]world.StepStatus
	waitDone  map[string]bool
}

func newPropMachine() *propMachine {
	return &propMachine{store: newPropStore(), model: newPropModel(), now: now,
		runEnded: map[string]world.RunStatus{}, stepEnded: map[string]world.StepStatus{}, waitDone: map[string]bool{}}
}

// batch draws a commit of 1 to 3 events to one run. Most events are ones
// the model accepts (drawn again until it does, a few times), so that runs
// get far; the others are anything, mostly refused.
func (p *propMachine) batch(t *rapid.T, run string) []propOp {
	ops := make([]propOp, rapid.IntRange(1, 3).Draw(t, "events"))
	_, exists := p.store.runs[run]
	tx := p.model.clone()
	for i := range ops {
		acceptable := rapid.IntRange(0, 3).Draw(t, "acceptable") > 0
		for try := 0; ; try++ {
			ops[i] = propEvent(t, run, exists || i > 0, p.now)
			if tx.judge(ops[i], p.now).err == nil || !acceptable || try == 10 {
				break
			}
		}
	}
	return ops
}

// expect returns what the model says of a commit of ops fenced with
// ifLastSeq (0: none): the index of the refused event (-1: the fence) and
// the refusal, or -1 and nil for a commit; the model then holds its effect.
func (p *propMachine) expect(run string, ops []propOp, ifLastSeq int64) (int, outcome) {
	if ifLastSeq > 0 && p.model.runs[run].seq != ifLastSeq {
		return -1, refused(world.ErrConflict)
	}
	tx := p.model.clone()
	for i, o := range ops {
		if out := tx.judge(o, p.now); out.err != nil {
			return i, out
		}
	}
	p.model = tx
	return -1, outcome{}
}

// commit proposes one commit and checks the outcome against the model.
func (p *propMachine) commit(t *rapid.T, run string, ops []propOp, ifLastSeq int64) (appended bool) {
	before := p.store.events[run]
	wantIndex, want := p.expect(run, ops, ifLastSeq)
	in := make([]world.EventInput, len(ops))
	for i, o := range ops {
		in[i] = world.EventInput{CorrelationID: o.corr, Data: o.data}
	}
	index, err := p.store.append(run, in, ifLastSeq, p.now)
	switch {
	case want.err == nil && err != nil:
		t.Fatalf("commit %s (IfLastSeq %d) refused at event %d: %v; the model accepts it", describe(ops), ifLastSeq, index, err)
	case want.err != nil && (!errors.Is(err, want.err) || index != wantIndex):
		t.Fatalf("commit %s (IfLastSeq %d): event %d refused with %v; the model refuses event %d with %v", describe(ops), ifLastSeq, index, err, wantIndex, want.err)
	}
	after := p.store.events[run]
	if err != nil && len(after) != len(before) {
		t.Fatalf("a refused commit appended %d events", len(after)-len(before))
	}
	return len(after) > len(before)
}

func describe(ops []propOp) string {
	s := ""
	for _, o := range ops {
		s += fmt.Sprintf("[%s %s %s]", o.run[len(o.run)-1:], typeOf(o.data), o.corr)
	}
	return s
}

func (p *propMachine) pickRun(t *rapid.T) string { return rapid.SampledFrom(propRuns()).Draw(t, "run") }

// Commit: one writer, unfenced, fenced on the current sequence number, or
// on a stale one.
func (p *propMachine) Commit(t *rapid.T) {
	run := p.pickRun(t)
	fence := int64(0)
	if last := p.store.runs[run].LastSeq; last > 0 {
		fence = rapid.SampledFrom([]int64{0, last, last, max(last-1, 1)}).Draw(t, "fence")
	}
	p.commit(t, run, p.batch(t, run), fence)
}

// Race: two writers read the run at the same sequence number and commit
// one after the other, both fenced on it (or neither): with the fence at
// most one appends; without it the second is judged on what the first
// left.
func (p *propMachine) Race(t *rapid.T) {
	run := p.pickRun(t)
	fence := int64(0)
	if rapid.Bool().Draw(t, "fenced") {
		fence = p.store.runs[run].LastSeq
	}
	a, b := p.batch(t, run), p.batch(t, run)
	first := p.commit(t, run, a, fence)
	second := p.commit(t, run, b, fence)
	if fence > 0 && first && second {
		t.Fatalf("both writers fenced on %d appended", fence)
	}
}

// Tick moves the clock (leases expire, retries come due).
func (p *propMachine) Tick(t *rapid.T) {
	p.now = p.now.Add(rapid.SampledFrom([]time.Duration{time.Second, 20 * time.Second, time.Minute, 3 * time.Minute, 6 * time.Minute}).Draw(t, "tick"))
}

// Check holds the invariants, then the store to the model.
func (p *propMachine) Check(t *rapid.T) {
	for run, evs := range p.store.events {
		p.checkLog(t, run, evs)
	}
	holders := map[string]string{}
	for id, h := range p.store.hooks {
		if other, ok := holders[h.Token]; ok {
			t.Fatalf("token %s held by hooks %s and %s", h.Token, other, id)
		}
		holders[h.Token] = id
		if p.store.runs[h.RunID].Status.Terminal() {
			t.Fatalf("hook %s of finished run %s is active", id, h.RunID)
		}
	}
	for k, st := range p.store.steps {
		if was, ok := p.stepEnded[k]; ok && st.Status != was && !slices.Contains(compStepMoves[was], st.Status) {
			t.Fatalf("step %s left terminal status %s for %s", k, was, st.Status)
		}
		if st.Status.Terminal() {
			p.stepEnded[k] = st.Status
		}
	}
	for k, w := range p.store.waits {
		if p.waitDone[k] && w.Status != world.WaitStatusCompleted {
			t.Fatalf("wait %s left completed for %s", k, w.Status)
		}
		p.waitDone[k] = w.Status == world.WaitStatusCompleted
	}
	p.matchModel(t)
}

// checkLog: dense sequence numbers that end at the run's LastSeq, one
// terminal event at most, after it only the outcomes of steps that were
// running and attribute_set, a run status that never leaves a terminal one, and a hold
// exactly while the run is held.
func (p *propMachine) checkLog(t *rapid.T, run string, evs []world.Event) {
	r := p.store.runs[run]
	terminals, deactivations, cleanups, pendingCleanup := 0, 0, 0, false
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("run %s: event %d has Seq %d", run, i, ev.Seq)
		}
		if d, ok := ev.Data.(*world.StepStarted); ok {
			if st := p.store.steps[key(run, ev.CorrelationID)]; d.Attempt > st.Attempt || d.Interrupted > d.Attempt-1 || d.Interrupted > st.Interrupted {
				t.Fatalf("run %s: step_started %+v for step %+v", run, d, st)
			}
		}
		switch et := ev.Type(); {
		case et.Terminal():
			terminals++
		case et == world.EventRunDeactivated:
			deactivations++
			if terminals == 0 || deactivations > 1 || cleanups == 0 && pendingCleanup {
				t.Fatalf("run %s: run_deactivated %d after %d terminal events (cleanup pending %v)", run, deactivations, terminals, pendingCleanup && cleanups == 0)
			}
		case et == world.EventRunCleanedUp:
			if cleanups++; !pendingCleanup || cleanups > 1 || deactivations > 0 {
				t.Fatalf("run %s: run_cleaned_up %d without a cleanup pending, or after run_deactivated", run, cleanups)
			}
		case deactivations > 0 && isComp(et):
			t.Fatalf("run %s: %s after run_deactivated", run, et)
		case terminals > 0 && et != world.EventStepCompleted && et != world.EventStepFailed && et != world.EventAttributeSet && !isComp(et):
			t.Fatalf("run %s: %s after its terminal event", run, et)
		}
		if d, ok := ev.Data.(*world.RunCompleted); ok && d.Cleanup {
			pendingCleanup = true
		}
	}
	if r.LastSeq != int64(len(evs)) {
		t.Fatalf("run %s: LastSeq %d with %d events", run, r.LastSeq, len(evs))
	}
	if terminals > 1 || (terminals == 1) != r.Status.Terminal() {
		t.Fatalf("run %s: %d terminal events, status %s", run, terminals, r.Status)
	}
	if (deactivations == 1) != r.Deactivated() {
		t.Fatalf("run %s: %d run_deactivated, DeactivatedAt %v", run, deactivations, r.DeactivatedAt)
	}
	if was, ok := p.runEnded[run]; ok && r.Status != was {
		t.Fatalf("run %s left terminal status %s for %s", run, was, r.Status)
	}
	if r.Status.Terminal() {
		p.runEnded[run] = r.Status
	}
	if (r.Status == world.RunStatusHeld) != (r.Hold != nil) {
		t.Fatalf("run %s: status %s with hold %+v; a hold goes with the held status only", run, r.Status, r.Hold)
	}
}

// matchModel compares the store's entities with the model's.
func (p *propMachine) matchModel(t *rapid.T) {
	m := p.model
	if len(p.store.runs) != len(m.runs) || len(p.store.steps) != len(m.steps) || len(p.store.hooks) != len(m.hooks) || len(p.store.waits) != len(m.waits) {
		t.Fatalf("store has %d runs, %d steps, %d hooks, %d waits; model %d, %d, %d, %d",
			len(p.store.runs), len(p.store.steps), len(p.store.hooks), len(p.store.waits), len(m.runs), len(m.steps), len(m.hooks), len(m.waits))
	}
	for id, mr := range m.runs {
		if r := p.store.runs[id]; r.Status != mr.status || r.LastSeq != mr.seq || r.Deactivated() != mr.deactivated || r.Cleanup != mr.cleanup {
			t.Fatalf("run %s: %s at %d (deactivated %v, cleanup %q), model %s at %d (%v, %q)", id, r.Status, r.LastSeq, r.Deactivated(), r.Cleanup,
				mr.status, mr.seq, mr.deactivated, mr.cleanup)
		}
		if r := p.store.runs[id]; r.Compensate != mr.compensate || r.Compensations != mr.comps {
			t.Fatalf("run %s: compensate %v counts %+v, model %v %+v", id, r.Compensate, r.Compensations, mr.compensate, mr.comps)
		}
		if r := p.store.runs[id]; attrBits(r.Attributes) != mr.attrs || len(r.Attributes) > world.MaxAttributes {
			t.Fatalf("run %s: attributes %v, model keys %b", id, r.Attributes, mr.attrs)
		}
	}
	for k, ms := range m.steps {
		st := p.store.steps[k]
		if st.Status != ms.status || st.Attempt != ms.attempt || st.Interrupted != ms.interrupted ||
			!st.RetryAfter.Equal(ms.retryAfter) || !st.LeaseExpiresAt.Equal(ms.leaseUntil) || !compMatches(st, ms) {
			t.Fatalf("step %s: %+v (compensation %+v), model %+v", k, st, st.Compensation, ms)
		}
	}
	for id, mh := range m.hooks {
		if h, ok := p.store.hooks[id]; !ok || h.RunID != mh.run || h.Token != mh.token || p.store.tokens[h.Token] != id {
			t.Fatalf("hook %s: %+v (token held by %q), model %+v", id, h, p.store.tokens[h.Token], mh)
		}
	}
	for k, done := range m.waits {
		if w := p.store.waits[k]; (w.Status == world.WaitStatusCompleted) != done {
			t.Fatalf("wait %s: %s, model completed=%v", k, w.Status, done)
		}
	}
}

func TestApplyProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		p := newPropMachine()
		// Long sequences (rapid's Repeat makes 30 steps on average), so that
		// runs live through many steps, hooks and waits.
		for range rapid.IntRange(20, 200).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1:
				p.Tick(t)
			case 2, 3:
				p.Race(t)
			default:
				p.Commit(t)
			}
			p.Check(t)
		}
	})
}

// isComp reports whether t is a comp_* event.
func isComp(t world.EventType) bool {
	return world.IsStepEvent(t) && strings.HasPrefix(string(t), "comp_")
}
