package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// recorder is a slog handler counting messages.
type recorder struct {
	mu   sync.Mutex
	msgs map[string]int
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[rec.Message]++
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for m, c := range r.msgs {
		if strings.HasPrefix(m, prefix) {
			n += c
		}
	}
	return n
}

// awaitAll parks until every future is done.
func awaitAll(c *Context, fs ...*Future) {
	c.Await(func() bool {
		for _, f := range fs {
			if !f.Done() {
				return false
			}
		}
		return true
	})
}

func TestFenceRefusalRebuilds(t *testing.T) {
	t.Parallel()
	rec := &recorder{msgs: map[string]int{}}
	// No event poll while the step runs: the session learns of the payload
	// only from the refused fence.
	h := newHarness(t, nil, Config{Logger: slog.New(rec), EventPollInterval: time.Hour})
	// The step appends a hook payload to its own run while it runs: the
	// commit of its result is refused, and the workflow is rebuilt with the
	// payload before the result.
	h.reg.step("poke", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var token string
		_ = json.Unmarshal(in, &token)
		if _, err := ResumeHook(ctx, h.w, time.Now, token, mustJSON("payload")); err != nil {
			return nil, err
		}
		return mustJSON("stepped"), nil
	})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		hk := c.Hook("tok-"+c.RunID(), nil, false)
		c.Await(hk.Registered)
		f := c.Step("poke", mustJSON("tok-"+c.RunID()))
		// Whichever settled first in the log wins.
		c.Await(func() bool { return f.Done() || hk.Len() > 0 })
		if hk.Len() > 0 {
			p, _ := hk.Payload(0)
			return p, nil
		}
		r, _ := f.Result()
		return r, nil
	})
	h.work(1, nil)
	id := h.start("w", nil)
	run := h.wait(id)
	if string(run.Output) != `"payload"` {
		t.Fatalf("output %s: the payload, appended first, must win", run.Output)
	}
	if n := rec.count("engine: commit refused"); n < 1 {
		t.Errorf("%d rebuilds, want at least 1", n)
	}
	// The step's result is recorded after the run's end (the run completed
	// from the payload first): wait for it.
	evs := h.events(id)
	for deadline := time.Now().Add(time.Minute); count(evs, world.EventStepCompleted) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		evs = h.events(id)
	}
	if count(evs, world.EventStepCompleted) != 1 || count(evs, world.EventRunCompleted) != 1 {
		t.Errorf("events: %d step_completed, %d run_completed", count(evs, world.EventStepCompleted), count(evs, world.EventRunCompleted))
	}
}

func TestInlineResultsDeliveredInCommitOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	h.reg.step("quick", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	h.reg.wf("race", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		a, b := c.Step("quick", mustJSON("a")), c.Step("quick", mustJSON("b"))
		c.Await(func() bool { return a.Done() || b.Done() })
		first := a
		if !a.Done() || (b.Done() && b.Order() < a.Order()) {
			first = b
		}
		awaitAll(c, a, b)
		r, _ := first.Result()
		return r, nil
	})
	h.work(2, nil)
	for range 20 {
		id := h.start("race", nil)
		run := h.wait(id)
		var firstInLog string
		for _, ev := range h.events(id) {
			if d, ok := ev.Data.(*world.StepCompleted); ok {
				firstInLog = string(d.Result)
				break
			}
		}
		if string(run.Output) != firstInLog {
			t.Fatalf("winner %s, but %s completed first in the log", run.Output, firstInLog)
		}
	}
}

func TestDivergenceNamesBothSides(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	h.reg.step("a", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(1), nil })
	h.reg.step("b", 0, func(context.Context, json.RawMessage) (json.RawMessage, error) { return mustJSON(2), nil })
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f := c.Step("a", nil)
		c.Await(f.Done)
		w := c.Wait(time.Now().Add(time.Hour))
		c.Await(w.Done)
		return nil, nil
	})
	id := h.start("w", nil)
	// Drive the first invocation by hand, until the run waits.
	msg := world.Message{RunID: id}
	if err := h.eng.Handle(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if n := count(h.events(id), world.EventWaitCreated); n != 1 {
		t.Fatalf("%d wait_created", n)
	}
	// New code: a sleep first, then step "b".
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		w := c.Wait(time.Now().Add(time.Hour))
		c.Await(w.Done)
		f := c.Step("b", nil)
		c.Await(f.Done)
		return nil, nil
	})
	if err := h.eng.Handle(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	run := divergedRun(t, h, id)
	for _, want := range []string{`step_created for step "a"`, "the workflow asks for wait"} {
		if !strings.Contains(run.Hold.Error.Message, want) {
			t.Errorf("%q lacks %q", run.Hold.Error.Message, want)
		}
	}
}

func TestKilledStepRerunsAfterLease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Linger: time.Second})
	var attempts atomic.Int32
	h.reg.step("s", 3, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		attempts.Add(1)
		info, _ := StepInfoFrom(ctx)
		return mustJSON(info.Attempt), nil
	})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		f := c.Step("s", nil)
		c.Await(f.Done)
		r, _ := f.Result()
		return r, nil
	})
	// Write the log a dead executor left: the run started, the step created
	// and started with a short lease, then nothing.
	id := h.ids.New(world.PrefixRun)
	stepID := newDetSource(id).id(world.PrefixStep)
	ctx := context.Background()
	for _, evs := range [][]world.EventInput{
		{{Data: &world.RunCreated{WorkflowName: "w"}}},
		{{Data: &world.RunStarted{}}, {CorrelationID: stepID, Data: &world.StepCreated{StepName: "s"}}, {CorrelationID: stepID, Data: &world.StepStarted{LeaseTTL: 300 * time.Millisecond}}},
	} {
		if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	h.work(1, nil)
	if err := Wake(ctx, h.w, time.Now, id, "start"); err != nil {
		t.Fatal(err)
	}
	run := h.wait(id)
	// The step runs once more, as its first attempt again: the one the
	// dead executor left was interrupted, not failed.
	if string(run.Output) != "1" || attempts.Load() != 1 {
		t.Fatalf("output %s after %d executions; want attempt 1, run once", run.Output, attempts.Load())
	}
	if st, err := h.w.GetStep(ctx, &world.GetStepParams{RunID: id, StepID: stepID}); err != nil || st.Attempt != 2 || st.Interrupted != 1 {
		t.Fatalf("step %+v (%v), want started twice, once interrupted", st, err)
	}
	if el := time.Since(began); el < 250*time.Millisecond {
		t.Errorf("re-ran after %s, before the lease expired", el)
	}
}

func TestLeaseHeldContinuationIsNotDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
	id := h.start("w", nil)
	ctx := context.Background()
	if _, err := h.w.AcquireRunLease(ctx, &world.RunLeaseParams{RunID: id, Owner: "someone-else", TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	h.work(1, nil)
	time.Sleep(150 * time.Millisecond)
	if r, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id}); r.Status != world.RunStatusPending {
		t.Fatalf("ran while another owner held the lease: %s", r.Status)
	}
	run := h.wait(id)
	if string(run.Output) != `"ok"` {
		t.Fatalf("output %s", run.Output)
	}
}

func TestNotBeforeHops(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{MaxQueueDelay: 100 * time.Millisecond})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
	id := h.ids.New(world.PrefixRun)
	ctx := context.Background()
	if _, err := h.w.Append(ctx, &world.AppendParams{RunID: id, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	// Far enough ahead that the hop is received before it however slow the
	// machine (the check below), near enough that the test waits little.
	notBefore := time.Now().Add(2 * time.Second)
	if err := h.eng.Handle(ctx, world.Message{RunID: id, NotBefore: notBefore}); err != nil {
		t.Fatal(err)
	}
	ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second})
	if err != nil || len(ds) != 1 {
		t.Fatalf("receive %v %v", ds, err)
	}
	m, _ := world.DecodeMessage(ds[0].Body)
	if m.Hop != 1 || !m.NotBefore.Equal(notBefore) {
		t.Errorf("re-enqueued %+v", m)
	}
	if time.Until(notBefore) < 100*time.Millisecond {
		t.Errorf("delivered too late to test the hop")
	}
	_ = h.lw.Ack(ctx, &world.AckParams{Receipt: ds[0].Receipt})
	h.work(1, nil)
	if err := h.eng.Handle(ctx, m); err != nil {
		t.Fatal(err)
	}
	run := h.wait(id)
	if time.Now().Before(notBefore) {
		t.Errorf("ran before NotBefore")
	}
	if string(run.Output) != `"ok"` {
		t.Errorf("output %s", run.Output)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{Options: Options{MaxDeliveries: 3}})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return mustJSON("ok"), nil })
	ctx := context.Background()
	missing := h.ids.New(world.PrefixRun)
	for name, msg := range map[string]world.Message{
		"malformed run ID":  {RunID: "not-a-run"},
		"malformed step ID": {RunID: missing, StepID: "nope"},
		"unknown run":       {RunID: missing},
		"unknown step":      {RunID: missing, StepID: h.ids.New(world.PrefixStep)},
	} {
		if err := h.eng.Handle(ctx, msg); !IsPermanent(err) {
			t.Errorf("%s: %v, want a permanent error", name, err)
		}
	}
	id := h.start("w", nil)
	if err := h.eng.HandleDelivery(ctx, world.Message{RunID: id}, 4); err != nil {
		t.Fatal(err)
	}
	run, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id})
	if run.Status != world.RunStatusFailed || run.ErrorCode != world.CodeMaxDeliveriesExceeded {
		t.Errorf("run %s %s", run.Status, run.ErrorCode)
	}
}

func TestTimeBudgetReenqueues(t *testing.T) {
	t.Parallel()
	// The budget ends 150 ms into a 30 s context (BudgetMargin is the rest):
	// the run (15 steps of 20 ms) cannot finish within it, and the context
	// keeps ample time for the re-enqueue however slow the machine is.
	const ctxTimeout, budget = 30 * time.Second, 150 * time.Millisecond
	h := newHarness(t, nil, Config{BudgetMargin: ctxTimeout - budget})
	h.reg.step("slow", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		time.Sleep(20 * time.Millisecond)
		return in, nil
	})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		for i := range 15 {
			f := c.Step("slow", mustJSON(i))
			c.Await(f.Done)
		}
		return mustJSON("ok"), nil
	})
	id := h.start("w", nil)
	ctx := context.Background()
	ds, err := h.lw.Receive(ctx, &world.ReceiveParams{Max: 1, Wait: time.Second})
	if err != nil || len(ds) != 1 {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, ctxTimeout)
	defer cancel()
	if err := h.eng.Handle(hctx, world.Message{RunID: id}); err != nil {
		t.Fatal(err)
	}
	if hctx.Err() != nil {
		t.Errorf("invocation ran past its context's deadline: %v", hctx.Err())
	}
	_ = h.lw.Ack(ctx, &world.AckParams{Receipt: ds[0].Receipt})
	if r, _ := h.w.GetRun(ctx, &world.GetRunParams{RunID: id}); r.Status.Terminal() {
		t.Fatal("finished within the budget; the test needs a longer workflow")
	}
	h.work(1, nil) // the continuation it enqueued finishes the run
	if run := h.wait(id); string(run.Output) != `"ok"` {
		t.Errorf("output %s", run.Output)
	}
	evs := h.events(id)
	if c := count(evs, world.EventStepCompleted); c != 15 {
		t.Errorf("%d steps completed", c)
	}
	for _, ev := range evs {
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Attempt != 1 {
			t.Errorf("attempt %d", d.Attempt)
		}
	}
}

func TestWorkflowPanicsAndErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{})
	h.reg.wf("panics", func(c *Context, in json.RawMessage) (json.RawMessage, error) { panic("kaboom") })
	h.reg.wf("errs", func(c *Context, in json.RawMessage) (json.RawMessage, error) { return nil, errBoom })
	h.work(2, nil)
	for _, tc := range []struct{ wf, code, msg string }{
		{"panics", world.CodeUserError, "workflow panicked: kaboom"},
		{"errs", world.CodeUserError, "boom"},
		{"missing", world.CodeRuntimeError, `workflow "missing" is not registered`},
	} {
		run := h.wait(h.start(tc.wf, nil))
		if run.Status != world.RunStatusFailed || run.ErrorCode != tc.code || !strings.Contains(run.Error.Message, tc.msg) {
			t.Errorf("%s: %s %s %+v", tc.wf, run.Status, run.ErrorCode, run.Error)
		}
		if tc.wf == "panics" && !strings.Contains(run.Error.Stack, "TestWorkflowPanicsAndErrors") {
			t.Errorf("no stack: %q", run.Error.Stack)
		}
	}
}

func TestCoroutineDiscard(t *testing.T) {
	t.Parallel()
	var deferred atomic.Bool
	done := newCoroutine(func() (json.RawMessage, error) { return json.RawMessage("1"), nil })
	done.step()
	if !done.done || string(done.output) != "1" {
		t.Fatal("not done")
	}
	done.stop()
	var c *coroutine
	c = newCoroutine(func() (json.RawMessage, error) {
		defer deferred.Store(true)
		c.await(func() bool { return false })
		return nil, errors.New("unreachable")
	})
	c.step()
	if !c.blocked || c.done {
		t.Fatal("not parked")
	}
	c.stop()
	if !deferred.Load() {
		t.Error("the discarded coroutine did not unwind")
	}
	if c.done {
		t.Error("a discarded coroutine reported a result")
	}
}

func TestDetSource(t *testing.T) {
	t.Parallel()
	ids := world.NewIDSource(nil, nil)
	run1, run2 := ids.New(world.PrefixRun), ids.New(world.PrefixRun)
	a, b, c := newDetSource(run1), newDetSource(run1), newDetSource(run2)
	seen := map[string]bool{}
	for range 100 {
		x, y, z := a.id(world.PrefixStep), b.id(world.PrefixStep), c.id(world.PrefixStep)
		if x != y {
			t.Fatalf("same run, different IDs: %s %s", x, y)
		}
		if x == z || seen[x] {
			t.Fatalf("collision %s", x)
		}
		if err := world.ValidateID(world.PrefixStep, x); err != nil {
			t.Fatal(err)
		}
		seen[x] = true
	}
	if a.token() != b.token() || a.user.Int64() != b.user.Int64() {
		t.Error("tokens or random values differ for one run")
	}
	rt, _ := idTime(run1)
	it, _ := idTime(a.id(world.PrefixHook))
	if !rt.Equal(it) {
		t.Errorf("ID time %s, run time %s", it, rt)
	}
}

// A step run inline outlives its lease TTL several times over while other
// continuations arrive (a hook payload per 50ms): the session running it
// holds the run, so they start nothing; the step runs once, in attempt 1.
// (The lease's renewal itself, which a step's other executors go by, is
// TestRunningStepRenewsItsLease's.)
func TestLongInlineStepRunsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Config{RunPollInterval: 20 * time.Millisecond, EventPollInterval: 20 * time.Millisecond, Options: Options{StepLeaseTTL: 90 * time.Millisecond}})
	var runs atomic.Int32
	h.reg.step("long", 0, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		var token string
		_ = json.Unmarshal(in, &token)
		for i := range 8 {
			time.Sleep(50 * time.Millisecond)
			if _, err := ResumeHook(ctx, h.w, time.Now, token, mustJSON(i)); err != nil {
				return nil, err
			}
		}
		return mustJSON("done"), nil
	})
	h.reg.wf("w", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
		token := "long-" + c.RunID()
		hk := c.Hook(token, nil, false)
		f := c.Step("long", mustJSON(token))
		awaitAll(c, f)
		c.Await(func() bool { return hk.Len() == 8 })
		return mustJSON(hk.Len()), nil
	})
	h.work(3, nil)
	run := h.wait(h.start("w", nil))
	if string(run.Output) != "8" || runs.Load() != 1 {
		t.Fatalf("output %s, step ran %d times", run.Output, runs.Load())
	}
	for _, ev := range h.events(run.RunID) {
		if d, ok := ev.Data.(*world.StepStarted); ok && d.Attempt != 1 {
			t.Errorf("attempt %d", d.Attempt)
		}
	}
}
