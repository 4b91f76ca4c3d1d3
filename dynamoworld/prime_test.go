package dynamoworld_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestPrimedSnapshot: a World that reads a run's whole log with one
// ListEvents caches the run as a fresh read would find it (complete: every
// step, wait and hook), for runs of every shape another World wrote; its
// next Append needs no read, and its end of the run deletes the run's
// hooks and waits without querying for them.
func TestPrimedSnapshot(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	a, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	app := func(run string, evs ...world.EventInput) {
		t.Helper()
		mustAppend(t, a, run, evs...)
	}
	step := func(run string, evs ...func(id string) world.EventInput) string {
		t.Helper()
		id := ids.New(world.PrefixStep)
		in := make([]world.EventInput, len(evs))
		for i, f := range evs {
			in[i] = f(id)
		}
		app(run, in...)
		return id
	}
	created := func(id string) world.EventInput {
		return world.EventInput{CorrelationID: id, Data: &world.StepCreated{StepName: "s", Input: json.RawMessage(`{ "spaced" : [1, 2] }`)}}
	}
	started := func(id string) world.EventInput {
		return world.EventInput{CorrelationID: id, Data: &world.StepStarted{LeaseTTL: time.Minute}}
	}
	hook := func(run, token string) string {
		id := ids.New(world.PrefixHook)
		app(run, world.EventInput{CorrelationID: id, Data: &world.HookCreated{Token: token, Metadata: json.RawMessage(`{"m": "<&>"}`)}})
		return id
	}
	wait := func(run string) string {
		id := ids.New(world.PrefixWait)
		app(run, world.EventInput{CorrelationID: id, Data: &world.WaitCreated{ResumeAt: time.Now().Add(time.Hour)}})
		return id
	}

	runs := map[string]string{} // name -> run ID
	// pending: created with everything a run_created carries.
	runs["pending"] = ids.New(world.PrefixRun)
	app(runs["pending"], world.EventInput{Data: &world.RunCreated{
		WorkflowName: "wf", DeploymentID: "d1", Input: json.RawMessage(`{ "a": 1 }`), ExecutionContext: json.RawMessage(`{"x":"y"}`),
		Attributes: map[string]string{"k": "v"}, IdempotencyKey: "idem-" + runs["pending"],
	}})
	// holder: holds a token another run asks for.
	runs["holder"] = startedRun(t, a)
	hook(runs["holder"], "held-"+runs["holder"])
	// busy: steps in every state, lazy ones, hooks and waits, a conflict.
	busy := startedRun(t, a)
	runs["busy"] = busy
	done := step(busy, created, started)
	app(busy, world.EventInput{CorrelationID: done, Data: &world.StepCompleted{Result: json.RawMessage(`"ok"`)}})
	retried := step(busy, created, started)
	app(busy, world.EventInput{CorrelationID: retried, Data: &world.StepRetrying{Error: &world.ErrorData{Message: "again"}, RetryAfter: time.Now().Add(time.Minute).UTC()}})
	failed := step(busy, created, started)
	app(busy, world.EventInput{CorrelationID: failed, Data: &world.StepFailed{Error: &world.ErrorData{Type: "E", Message: "no"}}})
	step(busy, created) // pending
	step(busy, created, started)
	step(busy, created, started) // running, lazy
	received := hook(busy, "t1-"+busy)
	app(busy, world.EventInput{CorrelationID: received, Data: &world.HookReceived{Payload: json.RawMessage(`1`)}})
	disposed := hook(busy, "t2-"+busy)
	app(busy, world.EventInput{CorrelationID: disposed, Data: &world.HookDisposed{}})
	hook(busy, "held-"+runs["holder"]) // a conflict
	hook(busy, "t2-"+busy)             // the disposed hook's token, again
	w1 := wait(busy)
	app(busy, world.EventInput{CorrelationID: w1, Data: &world.WaitCompleted{}})
	wait(busy)
	// big: payloads in S3.
	runs["big"] = ids.New(world.PrefixRun)
	app(runs["big"], world.EventInput{Data: &world.RunCreated{WorkflowName: "wf", Input: json.RawMessage(`"` + strings.Repeat("x", 100<<10) + `"`)}}, world.EventInput{Data: &world.RunStarted{}})
	bigStep := step(runs["big"], created, started)
	app(runs["big"], world.EventInput{CorrelationID: bigStep, Data: &world.StepCompleted{Result: json.RawMessage(`"` + strings.Repeat("y", 100<<10) + `"`)}})
	// ended: completed with a hook and a wait, which its end deleted.
	runs["ended"] = startedRun(t, a)
	hook(runs["ended"], "t-"+runs["ended"])
	wait(runs["ended"])
	step(runs["ended"], created, started)
	app(runs["ended"], world.EventInput{Data: &world.RunCompleted{Output: json.RawMessage(`{ "out": true }`)}})
	// cancelled.
	runs["cancelled"] = startedRun(t, a)
	app(runs["cancelled"], world.EventInput{Data: &world.RunCancelled{Reason: "enough"}})

	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			m := &dynamotest.Meter{}
			mc := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
			cfg := dynamotest.Config(mc, r, url)
			b, err := dynamoworld.New(ctx, cfg, knobs.WithSkipCheck())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			p, err := b.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: world.MaxPageLimit}})
			if err != nil {
				t.Fatal(err)
			}
			cs := dynamoworld.Cached(b, run)
			if !cs.Cached || !cs.Complete || cs.LastSeq != int64(len(p.Items)) {
				t.Fatalf("after reading the log (%d events): cached %+v, want a complete snapshot at %d", len(p.Items), cs, len(p.Items))
			}
			ns, nw, nh := 0, 0, 0
			for _, ev := range p.Items {
				switch ev.Data.(type) {
				case *world.StepCreated:
					ns++
				case *world.WaitCreated:
					nw++
				case *world.HookCreated:
					nh++
				case *world.HookDisposed:
					nh--
				case *world.RunCompleted, *world.RunFailed, *world.RunCancelled:
					nw, nh = 0, 0
				}
			}
			if cs.Steps != ns || cs.Waits != nw || cs.Hooks != nh {
				t.Fatalf("cached %d steps, %d waits, %d hooks; the log has %d, %d, %d", cs.Steps, cs.Waits, cs.Hooks, ns, nw, nh)
			}
			if diff, err := dynamoworld.CheckCached(ctx, b, run, true); err != nil || diff != "" {
				t.Fatalf("the cached snapshot differs from a fresh read: %s (%v)", diff, err)
			}
			got, err := b.GetRun(ctx, &world.GetRunParams{RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Terminal() {
				return
			}
			// The end of the run: the Query of the run's entities (their
			// write marks checked) and the transaction, deleting what a
			// fresh read would find.
			hooks, err := a.ListHooks(ctx, &world.ListHooksParams{RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			m.Reset()
			if _, err := b.Append(ctx, &world.AppendParams{RunID: run, IfLastSeq: got.LastSeq, Events: []world.EventInput{{Data: &world.RunFailed{Error: &world.ErrorData{Message: "stop"}}}}}); err != nil {
				t.Fatal(err)
			}
			if n := m.Count("DynamoDB"); n != 2 {
				t.Errorf("the run's end took %d DynamoDB requests (%s), want 2", n, m.Summary())
			}
			left, err := a.ListHooks(ctx, &world.ListHooksParams{RunID: run})
			if err != nil || len(left.Items) != 0 {
				t.Fatalf("hooks after the run's end: %+v, %v", left, err)
			}
			for _, h := range hooks.Items {
				if _, err := a.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: h.Token}); !errors.Is(err, world.ErrNotFound) {
					t.Fatalf("token %s after the run's end: %v", h.Token, err)
				}
				if _, err := a.GetHook(ctx, &world.GetHookParams{HookID: h.HookID}); !errors.Is(err, world.ErrNotFound) {
					t.Fatalf("hook %s after the run's end: %v", h.HookID, err)
				}
			}
			evs := allEvents(t, a, run)
			for _, ev := range evs {
				if _, ok := ev.Data.(*world.WaitCreated); ok {
					if stored, err := dynamoworld.WaitStored(ctx, a, run, ev.CorrelationID); stored || err != nil {
						t.Fatalf("wait %s after the run's end: stored %v, %v", ev.CorrelationID, stored, err)
					}
				}
			}
		})
	}
}

// TestPrimedSnapshotRenewedLease: a lazy step's lease renewed by another
// World after a World cached the run from its log: the cached lease is
// old, and a takeover judged on it (the lease looks expired) is refused by
// the step item's absence condition, judged again on a fresh read, and
// refused as the state machine refuses it (StepLeased); completing the
// step works.
func TestPrimedSnapshotRenewedLease(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	var ws [2]*dynamoworld.World
	for i := range ws {
		w, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws[i] = w
	}
	a, b := ws[0], ws[1]
	run := startedRun(t, a)
	st := ids.New(world.PrefixStep)
	mustAppend(t, a, run, world.EventInput{CorrelationID: st, Data: &world.StepCreated{StepName: "s"}}, world.EventInput{CorrelationID: st, Data: &world.StepStarted{LeaseTTL: 50 * time.Millisecond}})
	if _, err := b.ListEvents(ctx, &world.ListEventsParams{RunID: run}); err != nil {
		t.Fatal(err)
	}
	if !dynamoworld.Cached(b, run).Complete {
		t.Fatal("the log read cached no complete snapshot")
	}
	if _, err := a.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: st, Attempt: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if diff, _ := dynamoworld.CheckCached(ctx, b, run, true); !strings.Contains(diff, "step "+st) {
		t.Fatalf("the renewal is not a difference: %q", diff)
	}
	if diff, _ := dynamoworld.CheckCached(ctx, b, run, false); diff != "" {
		t.Fatalf("leases aside, the cached snapshot differs: %s", diff)
	}
	time.Sleep(100 * time.Millisecond) // the cached lease has expired
	_, err := b.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: st, Data: &world.StepStarted{}}}})
	var leased *world.RefusalError
	if !errors.As(err, &leased) || leased.Kind != world.ErrConflict || leased.Attempt != 1 {
		t.Fatalf("a takeover of the renewed step: %v, want StepLeased at attempt 1", err)
	}
	res, err := b.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: st, Data: &world.StepCompleted{Result: json.RawMessage(`1`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Results[0].Step; s.Status != world.StepStatusCompleted || s.Attempt != 1 {
		t.Fatalf("completed step: %+v", s)
	}
}

// TestRunEndCounted: a World that never saw the run ends it with one
// Query of the run's entities (their write marks checked), whether hooks
// and waits are left (a wait: deleted) or not (a hook created and
// disposed): the two Queries it made for hooks and waits are one.
func TestRunEndCounted(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	a, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, withWait := range []bool{false, true} {
		run := startedRun(t, a)
		h := ids.New(world.PrefixHook)
		mustAppend(t, a, run, world.EventInput{CorrelationID: h, Data: &world.HookCreated{Token: "tok-" + run}})
		mustAppend(t, a, run, world.EventInput{CorrelationID: h, Data: &world.HookDisposed{}})
		wait := ids.New(world.PrefixWait)
		if withWait {
			mustAppend(t, a, run, world.EventInput{CorrelationID: wait, Data: &world.WaitCreated{ResumeAt: time.Now()}})
		}
		st := ids.New(world.PrefixStep)
		mustAppend(t, a, run, world.EventInput{CorrelationID: st, Data: &world.StepCreated{StepName: "s"}}, world.EventInput{CorrelationID: st, Data: &world.StepStarted{}})

		m := &dynamotest.Meter{}
		mc := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
		cfg := dynamotest.Config(mc, r, url)
		b, err := dynamoworld.New(ctx, cfg, knobs.WithSkipCheck())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, b, run, world.EventInput{CorrelationID: st, Data: &world.StepCompleted{}}, world.EventInput{Data: &world.RunCompleted{}})
		b.Close()
		// The run and its newest commit, the step, the run's entities (their
		// marks checked, its hooks and waits deleted), the transaction.
		want := 4
		if n := m.Count("DynamoDB"); n != want {
			t.Errorf("with a wait %v: the run's end by a World that never saw the run took %d requests (%s), want %d", withWait, n, m.Summary(), want)
		}
		if stored, err := dynamoworld.WaitStored(ctx, a, run, wait); stored || err != nil {
			t.Fatalf("the wait after the run's end: stored %v, %v", stored, err)
		}
	}
}

// TestPrimeMergesIncomplete: a World whose cached snapshot of a run is
// current but incomplete (it read the run for one commit of its own) reads
// the run's log: it then knows every step, so its next commit of another
// step reads nothing, and it keeps what it knew better than the log, a
// lease it renewed.
func TestPrimeMergesIncomplete(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	a, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m := &dynamotest.Meter{}
	mc := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
	b, err := dynamoworld.New(ctx, dynamotest.Config(mc, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := startedRun(t, a)
	s1, s2 := ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, a, run, world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "one"}}, world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "two"}})
	mustAppend(t, b, run, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{LeaseTTL: 50 * time.Millisecond}})
	if _, err := b.RenewStepLease(ctx, &world.RenewStepLeaseParams{RunID: run, StepID: s1, Attempt: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if cs := dynamoworld.Cached(b, run); !cs.Cached || cs.Complete {
		t.Fatalf("before the log read: %+v, want an incomplete snapshot", cs)
	}
	if _, err := b.ListEvents(ctx, &world.ListEventsParams{RunID: run}); err != nil {
		t.Fatal(err)
	}
	if cs := dynamoworld.Cached(b, run); !cs.Complete || cs.Steps != 2 {
		t.Fatalf("after the log read: %+v, want a complete snapshot of 2 steps", cs)
	}
	if diff, err := dynamoworld.CheckCached(ctx, b, run, true); err != nil || diff != "" {
		t.Fatalf("the cached snapshot, leases included, differs from a fresh read: %s (%v)", diff, err)
	}
	m.Reset()
	mustAppend(t, b, run, world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	if n := m.Count("DynamoDB"); n != 1 {
		t.Fatalf("a commit of the other step took %d requests (%s), want 1", n, m.Summary())
	}
	time.Sleep(100 * time.Millisecond)
	_, err = b.Append(ctx, &world.AppendParams{RunID: run, Events: []world.EventInput{{CorrelationID: s1, Data: &world.StepStarted{}}}})
	var leased *world.RefusalError
	if !errors.As(err, &leased) || leased.Kind != world.ErrConflict || leased.Attempt < 1 {
		t.Fatalf("taking over the renewed step: %v, want StepLeased", err)
	}
}

// TestRollForward: a World holding a complete snapshot of a run reads the
// events other processes appended since, newest first (as the engine's
// lease holder does after background steps): its snapshot comes forward,
// still complete, so its next commit reads nothing and the run's end
// queries no hooks or waits; a read that stops short of the snapshot
// brings nothing.
func TestRollForward(t *testing.T) {
	dynamotest.Require(t)
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	r, url := dynamotest.NewResources(t, c)
	m := &dynamotest.Meter{}
	mc := dynamotest.Clients(t, dynamoworld.ClientOptions{}, m.Add)
	a, err := dynamoworld.New(ctx, dynamotest.Config(mc, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dynamoworld.New(ctx, dynamotest.Config(c, r, url))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := startedRun(t, a) // a created it: complete
	s1, s2, s3 := ids.New(world.PrefixStep), ids.New(world.PrefixStep), ids.New(world.PrefixStep)
	mustAppend(t, a, run, world.EventInput{CorrelationID: s1, Data: &world.StepCreated{StepName: "one"}}, world.EventInput{CorrelationID: s1, Data: &world.StepStarted{}},
		world.EventInput{CorrelationID: s2, Data: &world.StepCreated{StepName: "two"}}, world.EventInput{CorrelationID: s2, Data: &world.StepStarted{}})
	// Another process: a step's end, a new step, a hook, a wait.
	mustAppend(t, b, run, world.EventInput{CorrelationID: s1, Data: &world.StepCompleted{Result: json.RawMessage(`1`)}})
	mustAppend(t, b, run, world.EventInput{CorrelationID: s3, Data: &world.StepCreated{StepName: "three"}})
	h, wt := ids.New(world.PrefixHook), ids.New(world.PrefixWait)
	mustAppend(t, b, run, world.EventInput{CorrelationID: h, Data: &world.HookCreated{Token: "tok-" + run}})
	mustAppend(t, b, run, world.EventInput{CorrelationID: wt, Data: &world.WaitCreated{ResumeAt: time.Now()}})
	before := dynamoworld.Cached(a, run).LastSeq

	if _, err := a.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 2, Descending: true}}); err != nil {
		t.Fatal(err)
	}
	if cs := dynamoworld.Cached(a, run); cs.LastSeq != before {
		t.Fatalf("a read of the 2 newest events brought the snapshot from %d to %d; it did not reach it", before, cs.LastSeq)
	}
	p, err := a.ListEvents(ctx, &world.ListEventsParams{RunID: run, Pagination: world.Pagination{Limit: 16, Descending: true}})
	if err != nil {
		t.Fatal(err)
	}
	cs := dynamoworld.Cached(a, run)
	if !cs.Complete || cs.LastSeq != p.Items[0].Seq || cs.Steps != 3 || cs.Hooks != 1 || cs.Waits != 1 {
		t.Fatalf("after a read back to the snapshot: %+v, want a complete snapshot at %d with 3 steps, a hook and a wait", cs, p.Items[0].Seq)
	}
	if diff, err := dynamoworld.CheckCached(ctx, a, run, true); err != nil || diff != "" {
		t.Fatalf("the rolled snapshot differs from a fresh read: %s (%v)", diff, err)
	}
	m.Reset()
	mustAppend(t, a, run, world.EventInput{CorrelationID: s3, Data: &world.StepStarted{}})
	mustAppend(t, a, run, world.EventInput{CorrelationID: s2, Data: &world.StepCompleted{}}, world.EventInput{CorrelationID: s3, Data: &world.StepCompleted{}},
		world.EventInput{Data: &world.RunCompleted{}})
	if n := m.Count("DynamoDB"); n != 3 { // and the Query of the run's entities at its end
		t.Fatalf("two commits after the read took %d requests (%s), want 3", n, m.Summary())
	}
	if _, err := b.GetHookByToken(ctx, &world.GetHookByTokenParams{Token: "tok-" + run}); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("the hook's token after the run's end: %v", err)
	}
	if stored, err := dynamoworld.WaitStored(ctx, b, run, wt); stored || err != nil {
		t.Fatalf("the wait after the run's end: stored %v, %v", stored, err)
	}
}
