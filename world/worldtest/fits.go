package worldtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// Commits bigger than one Append takes: for a World that is a
// world.AppendLimiter, a writer appends wide commits in chunks of
// world.AppendFits, each fenced with IfLastSeq (as the engine does). Every
// chunk must commit, never refused for its size, and together they must
// append everything, in order. A World that is not an AppendLimiter takes
// commits of any size: these cases skip.

func fitsCases() []testCase {
	return []testCase{
		{"append_fits_steps_created", testFitsStepsCreated},
		{"append_fits_steps_created_and_started", testFitsStepsStarted},
		{"append_fits_hooks", testFitsHooks},
		{"append_fits_waits", testFitsWaits},
		{"append_fits_mixed_from_run_created", testFitsMixed},
		{"append_fits_mixed_ending_the_run", testFitsMixedEnd},
	}
}

// limiter returns the World as an AppendLimiter, or skips the case.
func (f *fixture) limiter() world.AppendLimiter {
	f.t.Helper()
	l, ok := f.w.(world.AppendLimiter)
	if !ok {
		f.t.Skip("worldtest: the World is not a world.AppendLimiter (it takes commits of any size); not applicable")
	}
	return l
}

// appendInFits appends evs to run, whose LastSeq is last, in chunks of
// world.AppendFits fenced with IfLastSeq (none while last is 0: the first
// chunk creates the run). It checks AppendFits' contract on every chunk,
// that every chunk commits, and that the log then holds evs in order. It
// returns the number of chunks.
func (f *fixture) appendInFits(l world.AppendLimiter, run string, last int64, evs []world.EventInput) int {
	f.t.Helper()
	start, rest, chunks := last, evs, 0
	for len(rest) > 0 {
		raw := l.AppendFits(rest)
		if raw < 1 || raw > len(rest) {
			f.t.Fatalf("AppendFits of %d events (%d appended, %d in all) = %d, want 1 to %d", len(rest), len(evs)-len(rest), len(evs), raw, len(rest))
		}
		if again := l.AppendFits(rest); again != raw {
			f.t.Fatalf("AppendFits of the same %d events = %d, then %d: not a pure function of the events", len(rest), raw, again)
		}
		n := world.AppendFits(f.w, rest)
		if n != raw {
			f.t.Fatalf("world.AppendFits = %d, the World's AppendFits %d", n, raw)
		}
		res, err := f.w.Append(f.ctx, &world.AppendParams{RunID: run, Events: rest[:n], IfLastSeq: last})
		if err != nil {
			f.t.Fatalf("chunk %d: Append of the %d events AppendFits allowed (events %d to %d of %d, from %s) refused: %v",
				chunks, n, len(evs)-len(rest), len(evs)-len(rest)+n-1, len(evs), describe(rest[:min(n, 3)]), err)
		}
		if res == nil || res.Run == nil || len(res.Results) != n {
			f.t.Fatalf("chunk %d: Append of %d events: result %+v", chunks, n, res)
		}
		for i, r := range res.Results {
			if r.Event == nil || r.Event.Seq != last+int64(i)+1 {
				f.t.Fatalf("chunk %d: result %d: event %+v, want Seq %d", chunks, i, r.Event, last+int64(i)+1)
			}
		}
		if res.Run.LastSeq != last+int64(n) {
			f.t.Fatalf("chunk %d: run LastSeq %d after appending %d events at %d", chunks, res.Run.LastSeq, n, last)
		}
		last = res.Run.LastSeq
		rest = rest[n:]
		chunks++
	}
	log := f.events(run)
	if int64(len(log)) != start+int64(len(evs)) {
		f.t.Fatalf("after %d chunks the log has %d events, want %d", chunks, len(log), start+int64(len(evs)))
	}
	for i, in := range evs {
		e := log[start+int64(i)]
		if e.Type() != in.Type() || e.CorrelationID != in.CorrelationID {
			f.t.Fatalf("log event %d: %s(%s), want %s(%s): the chunks were not appended in order", e.Seq, e.Type(), e.CorrelationID, in.Type(), in.CorrelationID)
		}
	}
	f.t.Logf("%d events in %d chunks", len(evs), chunks)
	return chunks
}

// fitsInput is a step input of n bytes (JSON).
func fitsInput(i, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", n)))
}

func testFitsStepsCreated(t *testing.T, f *fixture) {
	l := f.limiter()
	run := f.startedRun()
	steps := make([]string, 150)
	var evs []world.EventInput
	for i := range steps {
		steps[i] = ids.New(world.PrefixStep)
		evs = append(evs, ev(steps[i], &world.StepCreated{StepName: fmt.Sprint("wide-", i), Input: fitsInput(i, 16<<10)}))
	}
	f.appendInFits(l, run, f.getRun(run).LastSeq, evs)
	for i, id := range steps {
		s := f.getStep(run, id)
		if s.Status != world.StepStatusPending || !jsonEqual(s.Input, fitsInput(i, 16<<10)) {
			t.Fatalf("step %d after the chunks: %q, input of %d bytes", i, s.Status, len(s.Input))
		}
	}
}

func testFitsStepsStarted(t *testing.T, f *fixture) {
	l := f.limiter()
	run := f.startedRun()
	steps := make([]string, 150)
	var evs []world.EventInput
	for i := range steps {
		steps[i] = ids.New(world.PrefixStep)
		evs = append(evs,
			ev(steps[i], &world.StepCreated{StepName: fmt.Sprint("wide-", i), Input: fitsInput(i, 16)}),
			ev(steps[i], &world.StepStarted{LeaseTTL: time.Minute}))
	}
	f.appendInFits(l, run, f.getRun(run).LastSeq, evs)
	for i, id := range steps {
		if s := f.getStep(run, id); s.Status != world.StepStatusRunning || s.Attempt != 1 || !jsonEqual(s.Input, fitsInput(i, 16)) {
			t.Fatalf("step %d after the chunks: %q attempt %d", i, s.Status, s.Attempt)
		}
	}
}

func testFitsHooks(t *testing.T, f *fixture) {
	l := f.limiter()
	run := f.startedRun()
	hooks, tokens := make([]string, 60), make([]string, 60)
	var evs []world.EventInput
	for i := range hooks {
		hooks[i], tokens[i] = ids.New(world.PrefixHook), token()
		evs = append(evs, ev(hooks[i], &world.HookCreated{Token: tokens[i], IsWebhook: i%2 == 0, Metadata: json.RawMessage(fmt.Sprint(i))}))
	}
	f.appendInFits(l, run, f.getRun(run).LastSeq, evs)
	for i, tok := range tokens {
		h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
		if err != nil || h.HookID != hooks[i] || h.RunID != run || h.IsWebhook != (i%2 == 0) || !jsonEqual(h.Metadata, []byte(fmt.Sprint(i))) {
			t.Fatalf("hook %d after the chunks: GetHookByToken: %+v, %v", i, h, err)
		}
	}
	if got := len(f.listHooks(run)); got != len(hooks) {
		t.Fatalf("ListHooks after the chunks: %d hooks, want %d", got, len(hooks))
	}
}

func testFitsWaits(t *testing.T, f *fixture) {
	l := f.limiter()
	run := f.startedRun()
	waits := make([]string, 100)
	at := time.Now().Add(time.Hour)
	var evs []world.EventInput
	for i := range waits {
		waits[i] = ids.New(world.PrefixWait)
		evs = append(evs, ev(waits[i], &world.WaitCreated{ResumeAt: at}))
	}
	f.appendInFits(l, run, f.getRun(run).LastSeq, evs)
	for i, id := range waits {
		if w := f.completeWait(run, id); !sameTime(w.ResumeAt, at) { // each stored, waiting
			t.Fatalf("wait %d after the chunks: resumes at %v, want %v", i, w.ResumeAt, at)
		}
	}
}

// fitsMix creates and starts n steps, n hooks (half webhooks) and n waits,
// then completes the steps and waits, receives a payload on every hook and
// disposes of the even ones.
type fitsMix struct {
	steps, hooks, tokens, waits []string
	evs                         []world.EventInput
}

func newFitsMix(n int) *fitsMix {
	m := &fitsMix{steps: make([]string, n), hooks: make([]string, n), tokens: make([]string, n), waits: make([]string, n)}
	for i := range n {
		m.steps[i], m.hooks[i], m.tokens[i], m.waits[i] = ids.New(world.PrefixStep), ids.New(world.PrefixHook), token(), ids.New(world.PrefixWait)
		m.evs = append(m.evs,
			ev(m.steps[i], &world.StepCreated{StepName: "mix", Input: fitsInput(i, 64)}),
			ev(m.steps[i], &world.StepStarted{LeaseTTL: time.Minute}),
			ev(m.hooks[i], &world.HookCreated{Token: m.tokens[i], IsWebhook: i%2 == 1}),
			ev(m.waits[i], &world.WaitCreated{ResumeAt: time.Now()}))
	}
	for i := range n {
		m.evs = append(m.evs,
			ev(m.steps[i], &world.StepCompleted{Result: json.RawMessage(fmt.Sprint(i))}),
			ev(m.waits[i], &world.WaitCompleted{}),
			ev(m.hooks[i], &world.HookReceived{Payload: json.RawMessage(`"p"`)}))
		if i%2 == 0 {
			m.evs = append(m.evs, ev(m.hooks[i], &world.HookDisposed{}))
		}
	}
	return m
}

func (f *fixture) wantStepsCompleted(run string, steps []string) {
	f.t.Helper()
	for i, id := range steps {
		if s := f.getStep(run, id); s.Status != world.StepStatusCompleted || !jsonEqual(s.Output, []byte(fmt.Sprint(i))) {
			f.t.Fatalf("step %d after the chunks: %q output %s", i, s.Status, s.Output)
		}
	}
}

func testFitsMixed(t *testing.T, f *fixture) {
	l := f.limiter()
	run := ids.New(world.PrefixRun)
	m := newFitsMix(40)
	evs := append([]world.EventInput{
		ev("", &world.RunCreated{WorkflowName: testWorkflow, Input: json.RawMessage(`{"wide":true}`), IdempotencyKey: "fits/" + run}),
		ev("", &world.RunStarted{}),
	}, m.evs...)
	f.appendInFits(l, run, 0, evs)
	if r := f.getRun(run); r.Status != world.RunStatusRunning || r.IdempotencyKey != "fits/"+run {
		t.Fatalf("run after the chunks: %q, idempotency key %q", r.Status, r.IdempotencyKey)
	}
	f.wantStepsCompleted(run, m.steps)
	for i, id := range m.waits {
		f.wantWaitCompleted(run, id, "wait_completed of wait %d, completed in the chunks", i)
	}
	for i, tok := range m.tokens {
		h, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
		if i%2 == 0 {
			wantErr(t, err, world.ErrNotFound, "GetHookByToken of hook %d, disposed in the chunks", i)
			continue
		}
		if err != nil || h.HookID != m.hooks[i] || !h.IsWebhook {
			t.Fatalf("hook %d after the chunks: %+v, %v", i, h, err)
		}
	}
}

func testFitsMixedEnd(t *testing.T, f *fixture) {
	l := f.limiter()
	run := f.startedRun()
	m := newFitsMix(40)
	evs := append(m.evs, ev("", &world.RunCompleted{Output: json.RawMessage(`"wide"`)}))
	f.appendInFits(l, run, f.getRun(run).LastSeq, evs)
	if r := f.getRun(run); r.Status != world.RunStatusCompleted || !jsonEqual(r.Output, []byte(`"wide"`)) {
		t.Fatalf("run after the chunks: %q output %s", r.Status, r.Output)
	}
	f.wantStepsCompleted(run, m.steps)
	for i, tok := range m.tokens {
		_, err := f.w.GetHookByToken(f.ctx, &world.GetHookByTokenParams{Token: tok})
		wantErr(t, err, world.ErrNotFound, "GetHookByToken of hook %d of the ended run", i)
	}
	for i, id := range m.waits {
		f.wantWaitAbsent(run, id, "wait_completed of wait %d of the ended run", i)
	}
}
