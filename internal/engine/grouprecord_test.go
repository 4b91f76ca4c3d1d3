package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// outcomeWorld is appendLog that calls onOutcome after each committed
// Append recording a step's outcome.
type outcomeWorld struct {
	*appendLog
	onOutcome func()
}

func (o *outcomeWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := o.appendLog.Append(ctx, p)
	if err == nil && o.onOutcome != nil && count(eventsOf(p.Events), world.EventStepCompleted) > 0 {
		o.onOutcome()
	}
	return res, err
}

func eventsOf(in []world.EventInput) []world.Event {
	evs := make([]world.Event, len(in))
	for i, e := range in {
		evs[i] = world.Event{CorrelationID: e.CorrelationID, Data: e.Data}
	}
	return evs
}

// outcomeAppends returns the number of step outcomes of each committed
// Append that records any, in order.
func outcomeAppends(al *appendLog) []int {
	al.mu.Lock()
	defer al.mu.Unlock()
	var out []int
	for _, c := range al.commits {
		if n := count(eventsOf(c), world.EventStepCompleted); n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// A group's steps that finish while the first outcome is being gathered
// are recorded with it, in one Append, and a step still running then is
// not waited for: its outcome goes in a later Append. The first step runs
// at once; the others wait for the test, which releases them when the
// group lets its steps finish (settle) and waits for their outcomes. One
// step (slow) is released only once an outcome has committed. Before,
// the first outcome went out alone, before its siblings had run.
func TestGroupRecordsWhatFinishedMeanwhileTogether(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		slow bool
		want []int
	}{
		{"all finish", false, []int{6}},
		{"one slow", true, []int{5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ow *outcomeWorld
			h := newHarness(t, func(lw *localworld.World) world.World {
				ow = &outcomeWorld{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
				return ow
			}, Config{})
			runID, ids := groupRun(t, h, 6)
			gate, slowGate := make(chan struct{}), make(chan struct{})
			var once, slowOnce sync.Once
			open := func() { once.Do(func() { close(gate) }) }
			var slowOpen atomic.Bool
			openSlow := func() { slowOnce.Do(func() { slowOpen.Store(true); close(slowGate) }) }
			ow.onOutcome = func() { open(); openSlow() }
			h.reg.step("add", 2, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				info, _ := StepInfoFrom(ctx)
				switch {
				case info.StepID == ids[0]:
				case tc.slow && info.StepID == ids[5]:
					<-slowGate
				default:
					<-gate
				}
				return addStep(ctx, in)
			})
			h.eng.bg.settle = func(results <-chan outcome, left int) {
				open()
				want := left
				if tc.slow && !slowOpen.Load() {
					want = left - 1 // all but the slow one
				}
				for deadline := time.Now().Add(time.Minute); len(results) < want; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Errorf("%d outcomes arrived, want %d", len(results), want)
						return
					}
				}
			}
			if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
				t.Fatal(err)
			}
			run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
			if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "21" {
				t.Fatalf("run %+v %v, want completed with 21", run, err)
			}
			got := outcomeAppends(ow.appendLog)
			if len(got) != len(tc.want) || got[0] != tc.want[0] || len(got) > 1 && got[1] != tc.want[1] {
				t.Errorf("outcomes per Append %v, want %v", got, tc.want)
			}
		})
	}
}

// refusedLog is appendLog that also counts the Appends refused.
type refusedLog struct {
	*appendLog
	refused atomic.Int64
}

func (r *refusedLog) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := r.appendLog.Append(ctx, p)
	if err != nil {
		r.refused.Add(1)
	}
	return res, err
}

// A group leaves out of its start the steps its read shows running under
// another executor's live lease, or waiting for their retry's time, as
// their refused step_started would (TestGroupSkipsWhatOthersOwn): before,
// each cost a refused Append of the group's start, one at a time. Here two
// steps a session took up inline (their messages dropped: the session
// sees to them) and one waiting for its retry (queued again for then).
func TestGroupLeavesOutWhatItsReadShowsOwned(t *testing.T) {
	t.Parallel()
	var rl *refusedLog
	h := newHarness(t, func(lw *localworld.World) world.World {
		rl = &refusedLog{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
		return rl
	}, Config{})
	runID, ids := groupRun(t, h, 6)
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	for _, ev := range []world.EventInput{
		{CorrelationID: ids[1], Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Hour}},
		{CorrelationID: ids[2], Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Hour}},
		{CorrelationID: ids[3], Data: &world.StepStarted{StepName: "add", Queued: true}},
		{CorrelationID: ids[3], Data: &world.StepRetrying{StepName: "add", Error: &world.ErrorData{Message: "later"}, RetryAfter: later}},
	} {
		if _, err := h.lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	if n := rl.refused.Load(); n != 0 {
		t.Errorf("%d Appends refused, want none", n)
	}
	rl.mu.Lock()
	var started []string
	for _, c := range rl.commits {
		for _, ev := range c {
			if _, ok := ev.Data.(*world.StepStarted); ok {
				started = append(started, ev.CorrelationID)
			}
		}
	}
	rl.mu.Unlock()
	if want := []string{ids[0], ids[4], ids[5]}; !slices.Equal(started, want) {
		t.Errorf("started %v, want %v", started, want)
	}
	for i, want := range []world.StepStatus{world.StepStatusCompleted, world.StepStatusRunning, world.StepStatusRunning, world.StepStatusPending, world.StepStatusCompleted, world.StepStatusCompleted} {
		st, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: ids[i]})
		if err != nil || st.Status != want || i < 3 && st.Attempt != 1 {
			t.Errorf("step %d: %+v %v, want %s", i, st, err, want)
		}
	}
	msgs := rl.snapshot()
	if len(msgs) != 1 || msgs[0].StepID != ids[3] || msgs[0].NotBefore.Before(later) || msgs[0].NotBefore.After(later.Add(time.Second)) {
		t.Errorf("messages %+v, want step 3 queued again for %v", msgs, later)
	}
}

// sessionRace is refusedLog that, before the first Append starting queued
// steps, appends what a session taking up some of them would: step_started
// (inline) for the steps in take, and their completion for those in done.
type sessionRace struct {
	*refusedLog
	runID      string
	take, done []string
	once       sync.Once
}

func (s *sessionRace) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if d, ok := p.Events[0].Data.(*world.StepStarted); ok && d.Queued {
		s.once.Do(func() {
			var evs []world.EventInput
			for _, id := range s.take {
				evs = append(evs, world.EventInput{CorrelationID: id, Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Hour}})
			}
			for _, id := range s.done {
				evs = append(evs, world.EventInput{CorrelationID: id, Data: &world.StepCompleted{StepName: "add", Result: mustJSON(0)}})
			}
			if _, err := s.World.Append(ctx, &world.AppendParams{RunID: s.runID, Events: evs}); err != nil {
				panic(err)
			}
		})
	}
	return s.refusedLog.Append(ctx, p)
}

// A group whose start is refused because a session took up some of its
// steps after the group read them (here three: two still running, one
// completed) reads the steps left again and leaves those out at once,
// rather than meet each one's refusal in turn: one refused Append, not
// three.
func TestGroupReadsAgainAfterARefusedStart(t *testing.T) {
	t.Parallel()
	var sr *sessionRace
	h := newHarness(t, func(lw *localworld.World) world.World {
		sr = &sessionRace{refusedLog: &refusedLog{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}}
		return sr
	}, Config{})
	runID, ids := groupRun(t, h, 6)
	sr.runID, sr.take, sr.done = runID, ids[2:5], ids[4:5]
	ctx := context.Background()
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	if n := sr.refused.Load(); n != 1 {
		t.Errorf("%d Appends refused, want 1", n)
	}
	for i, want := range []world.StepStatus{world.StepStatusCompleted, world.StepStatusCompleted, world.StepStatusRunning, world.StepStatusRunning, world.StepStatusCompleted, world.StepStatusCompleted} {
		st, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: ids[i]})
		if err != nil || st.Status != want || st.Attempt != 1 {
			t.Errorf("step %d: %+v %v, want %s at attempt 1", i, st, err, want)
		}
	}
	if msgs := sr.snapshot(); len(msgs) != 0 {
		t.Errorf("messages %+v, want none (the session sees to its steps)", msgs)
	}
}

// getCounter counts GetStep calls.
type getCounter struct {
	*appendLog
	gets atomic.Int64
}

func (g *getCounter) GetStep(ctx context.Context, p *world.GetStepParams) (*world.Step, error) {
	g.gets.Add(1)
	return g.appendLog.GetStep(ctx, p)
}

// A group whose steps this process's Appends left (knownsteps.go: here
// noted from the World's steps at creation) sorts them by what it knows
// rather than read each from the World. What it knows may be old: a step
// known as created that has completed since is refused at the start, read
// again with the steps left, and recorded once all the same.
func TestGroupSortsTheStepsItsProcessKnows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stale bool
		gets  int64
	}{
		{"as known", false, 0},
		{"one completed since", true, 6}, // the refused one, then the 5 left
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var gc *getCounter
			h := newHarness(t, func(lw *localworld.World) world.World {
				gc = &getCounter{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
				return gc
			}, Config{})
			runID, ids := groupRun(t, h, 6)
			ctx := context.Background()
			res := &world.AppendResult{}
			for i, id := range ids {
				st, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: id})
				if err != nil {
					t.Fatal(err)
				}
				res.Results = append(res.Results, world.EventResult{Event: &world.Event{Seq: int64(3 + i)}, Step: st})
			}
			h.eng.known.note(runID, res)
			if tc.stale {
				for _, ev := range []world.EventInput{
					{CorrelationID: ids[2], Data: &world.StepStarted{StepName: "add"}},
					{CorrelationID: ids[2], Data: &world.StepCompleted{StepName: "add", Result: mustJSON(3)}},
				} {
					if _, err := h.lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{ev}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
			if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
				t.Fatal(err)
			}
			if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
				t.Fatal(err)
			}
			if n := gc.gets.Load(); n != tc.gets {
				t.Errorf("%d GetStep calls, want %d", n, tc.gets)
			}
			evs := h.events(runID)
			if n := count(evs, world.EventStepCompleted); n != 6 {
				t.Errorf("step_completed = %d, want 6", n)
			}
			if n := count(evs, world.EventStepStarted); n != 6 {
				t.Errorf("step_started = %d, want 6", n)
			}
		})
	}
}

// A group goes on yielding for as long as each yield brings more outcomes
// (gather), not once: here each yield (settle) lets one more of the
// group's held steps finish and waits for its outcome, so the outcomes
// arrive over five yields, and the sixth brings none. All six are recorded
// in one Append all the same. (An Append of outcomes lets the steps still
// held finish, so that a group that stops yielding early records them
// later rather than waits for them forever.)
func TestGroupGathersOverSeveralYields(t *testing.T) {
	t.Parallel()
	var ow *outcomeWorld
	h := newHarness(t, func(lw *localworld.World) world.World {
		ow = &outcomeWorld{appendLog: &appendLog{msgWorld: &msgWorld{World: lw}}}
		return ow
	}, Config{})
	runID, ids := groupRun(t, h, 6)
	gates := map[string]chan struct{}{}
	for _, id := range ids[1:] {
		gates[id] = make(chan struct{})
	}
	var mu sync.Mutex
	next, yields := 1, 0
	release := func() bool { // lets the next held step finish; mu is held
		if next == len(ids) {
			return false
		}
		close(gates[ids[next]])
		next++
		return true
	}
	ow.onOutcome = func() {
		mu.Lock()
		defer mu.Unlock()
		for next < len(ids) {
			release()
		}
	}
	h.reg.step("add", 2, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		info, _ := StepInfoFrom(ctx)
		if g := gates[info.StepID]; g != nil {
			<-g
		}
		return addStep(ctx, in)
	})
	h.eng.bg.settle = func(results <-chan outcome, left int) {
		mu.Lock()
		yields++
		released := release()
		mu.Unlock()
		if !released {
			return // nothing more finishes: this yield brings nothing
		}
		for deadline := time.Now().Add(time.Minute); len(results) < 1; time.Sleep(time.Millisecond) { // a bound against a hang
			if time.Now().After(deadline) {
				t.Error("the released step's outcome did not arrive")
				return
			}
		}
	}
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "21" {
		t.Fatalf("run %+v %v, want completed with 21", run, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := outcomeAppends(ow.appendLog); !slices.Equal(got, []int{6}) {
		t.Errorf("outcomes per Append %v over %d yields, want [6]", got, yields)
	}
}
