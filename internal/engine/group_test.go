package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// appendLog records the events of every Append that committed.
type appendLog struct {
	*msgWorld
	mu      sync.Mutex
	commits [][]world.EventInput
}

func (a *appendLog) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := a.msgWorld.Append(ctx, p)
	if err == nil {
		a.mu.Lock()
		a.commits = append(a.commits, append([]world.EventInput(nil), p.Events...))
		a.mu.Unlock()
	}
	return res, err
}

// groupRun appends a started run of workflow "group" with n created "add"
// steps (plus what prepare appends for them) and returns the run and step
// IDs. The workflow sums the steps' results.
func groupRun(t *testing.T, h *harness, n int) (string, []string) {
	t.Helper()
	h.reg.step("add", 2, addStep)
	h.reg.wf("group", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		fs := make([]*Future, n)
		for i := range n {
			fs[i] = c.Step("add", mustJSON([2]int{i, 1}))
		}
		awaitAll(c, fs...)
		sum := 0
		for _, f := range fs {
			r, fail := f.Result()
			if fail != nil {
				return nil, &Failure{Data: fail}
			}
			var v int
			_ = json.Unmarshal(r, &v)
			sum += v
		}
		return mustJSON(sum), nil
	})
	runID := h.ids.New(world.PrefixRun)
	det := newDetSource(runID)
	evs := []world.EventInput{{Data: &world.RunCreated{WorkflowName: "group", Input: mustJSON(nil)}}, {Data: &world.RunStarted{}}}
	ids := make([]string, n)
	for i := range n {
		ids[i] = det.id(world.PrefixStep)
		evs = append(evs, world.EventInput{CorrelationID: ids[i], Data: &world.StepCreated{StepName: "add", Input: mustJSON([2]int{i, 1})}})
	}
	if _, err := h.lw.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs}); err != nil {
		t.Fatal(err)
	}
	return runID, ids
}

// A message naming several steps starts them in one Append and records
// their outcomes in as few as they finish in (here at most one per step,
// against two per step one at a time), each step once; then the executor
// takes the run on and completes it.
func TestGroupStartsInOneAppend(t *testing.T) {
	t.Parallel()
	var al *appendLog
	h := newHarness(t, func(lw *localworld.World) world.World { al = &appendLog{msgWorld: &msgWorld{World: lw}}; return al }, Config{})
	runID, ids := groupRun(t, h, 6)
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	run, err := h.lw.GetRun(context.Background(), &world.GetRunParams{RunID: runID})
	if err != nil || run.Status != world.RunStatusCompleted || string(run.Output) != "21" {
		t.Fatalf("run %+v %v, want completed with 21", run, err)
	}
	starts, results := 0, 0
	for _, c := range al.commits {
		var s, r int
		for _, ev := range c {
			switch d := ev.Data.(type) {
			case *world.StepStarted:
				if !d.Queued {
					t.Errorf("step_started of %s not queued", ev.CorrelationID)
				}
				s++
			case *world.StepCompleted:
				r++
			}
		}
		if s > 0 && s != 6 {
			t.Errorf("an Append started %d steps, want all 6 in one", s)
		}
		if s > 0 {
			starts++
		}
		if r > 0 && s == 0 && len(c) == r {
			results++
		}
	}
	if starts != 1 || results < 1 || results > 6 {
		t.Errorf("%d Appends of starts and %d of results, want 1 and 1 to 6", starts, results)
	}
	if n := count(h.events(runID), world.EventStepCompleted); n != 6 {
		t.Errorf("step_completed = %d, want 6", n)
	}
	if msgs := al.snapshot(); len(msgs) != 0 {
		t.Errorf("messages %+v, want none", msgs)
	}
}

// A group whose steps are in every state a redelivery or an overlap can
// find: one completed already (it still wakes the run), one running under
// another executor's lease and one waiting for its retry (each queued again
// for the time it may start: the lease's holder may have died), the rest
// startable.
func TestGroupSkipsWhatOthersOwn(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	runID, ids := groupRun(t, h, 5)
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	for _, ev := range []world.EventInput{
		{CorrelationID: ids[0], Data: &world.StepStarted{StepName: "add", Queued: true}},
		{CorrelationID: ids[0], Data: &world.StepCompleted{StepName: "add", Result: mustJSON(1)}},
		{CorrelationID: ids[1], Data: &world.StepStarted{StepName: "add", LeaseTTL: time.Hour, Queued: true}},
		{CorrelationID: ids[2], Data: &world.StepStarted{StepName: "add", Queued: true}},
		{CorrelationID: ids[2], Data: &world.StepRetrying{StepName: "add", Error: &world.ErrorData{Message: "later"}, RetryAfter: later}},
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
	for i, want := range []world.StepStatus{world.StepStatusCompleted, world.StepStatusRunning, world.StepStatusPending, world.StepStatusCompleted, world.StepStatusCompleted} {
		st, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: ids[i]})
		if err != nil || st.Status != want {
			t.Errorf("step %d: %+v %v, want %s", i, st, err, want)
		}
	}
	leased, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{ids[1]: leased.LeaseExpiresAt, ids[2]: later}
	msgs := mw.snapshot()
	if len(msgs) != 2 {
		t.Fatalf("messages %+v, want steps 1 and 2 queued again", msgs)
	}
	for _, m := range msgs {
		at, ok := want[m.StepID]
		if !ok || m.NotBefore.Before(at) || m.NotBefore.After(at.Add(time.Second)) {
			t.Errorf("message %+v, want step 1 at its lease's expiry %v and step 2 at %v", m, leased.LeaseExpiresAt, later)
		}
	}
}

// A group step that fails with a retryable error is recorded as retrying
// and queued again on its own; the others complete.
func TestGroupRetryQueuesTheStepAgain(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	runID, ids := groupRun(t, h, 3)
	h.reg.step("add", 2, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		info, _ := StepInfoFrom(ctx)
		if info.StepID == ids[1] {
			return nil, errors.New("flaky")
		}
		return addStep(ctx, in)
	})
	ctx := context.Background()
	holder := &world.RunLeaseParams{RunID: runID, Owner: "holder", TTL: time.Minute}
	if _, err := h.w.AcquireRunLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: ids[0], StepIDs: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	evs := h.events(runID)
	if count(evs, world.EventStepCompleted) != 2 || count(evs, world.EventStepRetrying) != 1 {
		t.Fatalf("events: %d completed, %d retrying", count(evs, world.EventStepCompleted), count(evs, world.EventStepRetrying))
	}
	msgs := mw.snapshot()
	if len(msgs) != 1 || msgs[0].StepID != ids[1] || len(msgs[0].StepIDs) != 0 || msgs[0].NotBefore.IsZero() {
		t.Fatalf("messages %+v, want the failed step queued again for its retry", msgs)
	}
}

// A background message whose step is running under a live lease (its
// executor died, or a duplicate delivery's executor still runs it) is not
// dropped: it comes back at the lease's expiry and then runs the step,
// which completes the run. The lease is short so that the test ends soon;
// a delivery judged after the lease had already expired (a machine that
// stalled longer than the lease between the step's start and the
// delivery's end) proves nothing either way, and the case is run again
// with a lease four times longer.
func TestLeasedStepMessageComesBackAtExpiry(t *testing.T) {
	t.Parallel()
	for ttl := 200 * time.Millisecond; ; ttl *= 4 {
		if leasedStepComesBack(t, ttl) {
			return
		}
		if ttl > time.Minute {
			t.Fatalf("every lease up to %s expired before its delivery was handled", ttl)
		}
		t.Logf("the %s lease expired before the delivery was handled: again with a longer one", ttl)
	}
}

// leasedStepComesBack runs TestLeasedStepMessageComesBackAtExpiry's case
// with a lease of ttl, and reports false when the lease expired before the
// delivery was handled (nothing was judged).
func leasedStepComesBack(t *testing.T, ttl time.Duration) bool {
	t.Helper()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	runID, stepID := oneStepRun(t, h, &world.StepStarted{StepName: "add", LeaseTTL: ttl, Queued: true})
	ctx := context.Background()
	st, err := h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Handle(ctx, world.Message{RunID: runID, StepID: stepID}); err != nil {
		t.Fatal(err)
	}
	if !time.Now().Before(st.LeaseExpiresAt) {
		return false
	}
	msgs := mw.snapshot()
	if len(msgs) != 1 || msgs[0].StepID != stepID || msgs[0].NotBefore.IsZero() {
		t.Fatalf("messages %+v, want the step queued again for its lease's expiry", msgs)
	}
	h.work(1, nil)
	run := h.wait(runID)
	if run.Status != world.RunStatusCompleted || string(run.Output) != "3" {
		t.Fatalf("run %s %s, want completed with 3", run.Status, run.Output)
	}
	st, err = h.lw.GetStep(ctx, &world.GetStepParams{RunID: runID, StepID: stepID})
	if err != nil || st.Attempt != 2 {
		t.Fatalf("step %+v %v, want completed in attempt 2", st, err)
	}
	return true
}

// A background message whose step an invocation runs inline (a session
// took it on before the message arrived) leaves it to that invocation: no
// message comes back for it.
func TestInlineLeasedStepMessageIsDropped(t *testing.T) {
	t.Parallel()
	var mw *msgWorld
	h := newHarness(t, func(lw *localworld.World) world.World { mw = &msgWorld{World: lw}; return mw }, Config{})
	runID, stepID := oneStepRun(t, h, &world.StepStarted{StepName: "add", LeaseTTL: time.Hour})
	if err := h.eng.Handle(context.Background(), world.Message{RunID: runID, StepID: stepID}); err != nil {
		t.Fatal(err)
	}
	if msgs := mw.snapshot(); len(msgs) != 0 {
		t.Fatalf("messages %+v, want none", msgs)
	}
}
