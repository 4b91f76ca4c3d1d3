package sdk_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

var subStep = sdk.NewStep("sub-step", func(ctx context.Context, n int) (int, error) { return n * 2, nil })

// subWorkflow runs a step, then waits for a hook, then runs a step.
var subWorkflow = sdk.New("sub-workflow", func(ctx sdk.Context, token string) (int, error) {
	a, err := subStep.Call(ctx, 1)
	if err != nil {
		return 0, err
	}
	h := sdk.NewHook[int](ctx, sdk.HookOptions{Token: token})
	n, err := h.Receive(ctx)
	if err != nil {
		return 0, err
	}
	return subStep.Call(ctx, a+n)
})

// hiddenWatcher is a World without its world.Watcher: a subscription on it
// polls through the read API.
type hiddenWatcher struct{ world.World }

// startWaiting starts a subWorkflow run and waits until it waits for its
// hook.
func startWaiting(t *testing.T, e *env, ctx context.Context, token string) string {
	t.Helper()
	run, err := subWorkflow.Start(ctx, e.client, token)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook registered", func() bool {
		_, err := e.client.GetHookByToken(ctx, token)
		return err == nil
	})
	return run.ID()
}

// drain reads updates until the subscription ends (io.EOF).
func drain(t *testing.T, sub *sdk.Subscription) []*sdk.Update {
	t.Helper()
	var out []*sdk.Update
	for {
		u, err := sub.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, u)
	}
}

func TestSubscribeRunSnapshotThenEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		world func(*localworld.World) world.World
	}{
		{"watcher", nil},
		{"polling", func(lw *localworld.World) world.World { return hiddenWatcher{lw} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{world: tc.world}, subWorkflow, subStep)
			ctx := e.ctx()
			token := "sub-" + t.Name()
			run := startWaiting(t, e, ctx, token)
			sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{RunID: run, Snapshot: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			first, err := sub.Next()
			if err != nil {
				t.Fatal(err)
			}
			snap := first.Snapshot
			if snap == nil || first.Event != nil {
				t.Fatalf("first update %+v, want a snapshot", first)
			}
			if snap.Run.RunID != run || len(snap.Steps) != 1 || snap.Steps[0].Status != world.StepStatusCompleted ||
				len(snap.Hooks) != 1 || snap.Hooks[0].Token != token {
				t.Fatalf("snapshot %+v: want the run with its completed step and its hook", snap)
			}
			if _, err := e.client.ResumeHook(ctx, token, 5); err != nil {
				t.Fatal(err)
			}
			rest := drain(t, sub)
			all := e.events(run)
			want := all[snap.Run.LastSeq:]
			if len(rest) != len(want) {
				t.Fatalf("%d events after the snapshot, want %d", len(rest), len(want))
			}
			for i, u := range rest {
				if u.Event == nil || u.Event.Seq != want[i].Seq || u.Cursor != world.RunCursor(run, want[i].Seq) {
					t.Fatalf("update %d = %+v, want event %d", i, u, want[i].Seq)
				}
			}
			// The run's end commits run_deactivated with it (nothing runs).
			if n := len(rest); rest[n-2].Event.Type() != world.EventRunCompleted || rest[n-1].Event.Type() != world.EventRunDeactivated {
				t.Fatalf("last updates %s, %s; want run_completed, run_deactivated", rest[n-2].Event.Type(), rest[n-1].Event.Type())
			}
		})
	}
}

func TestSubscribeResumeAndTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subWorkflow, subStep)
	ctx := e.ctx()
	token := "sub-resume-" + t.Name()
	run := startWaiting(t, e, ctx, token)
	sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{RunID: run, Types: []world.EventType{world.EventStepCompleted, world.EventRunCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := sub.Next() // the first step's completion, from the log
	if err != nil || u.Event.Type() != world.EventStepCompleted {
		t.Fatalf("Next = %+v, %v; want step_completed", u, err)
	}
	sub.Close()
	if _, err := sub.Next(); !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		t.Fatalf("Next after Close = %v, want context.Canceled", err)
	}
	if _, err := e.client.ResumeHook(ctx, token, 5); err != nil {
		t.Fatal(err)
	}
	again, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{RunID: run, After: u.Cursor, Types: []world.EventType{world.EventStepCompleted, world.EventRunCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var types []world.EventType
	for u, err := range again.All() {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, u.Event.Type())
	}
	if len(types) != 2 || types[0] != world.EventStepCompleted || types[1] != world.EventRunCompleted {
		t.Fatalf("resumed updates %v, want step_completed, run_completed", types)
	}
}

func TestSubscribeAllRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subWorkflow, subStep)
	ctx := e.ctx()
	waiting := startWaiting(t, e, ctx, "sub-all-a-"+t.Name())
	sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{Snapshot: true, Types: []world.EventType{world.EventRunCreated, world.EventRunCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	u, err := sub.Next()
	if err != nil || u.Snapshot == nil || u.Snapshot.Run.RunID != waiting {
		t.Fatalf("first update %+v, %v: want the waiting run's snapshot", u, err)
	}
	other := startWaiting(t, e, ctx, "sub-all-b-"+t.Name())
	if _, err := e.client.ResumeHook(ctx, "sub-all-a-"+t.Name(), 1); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		run string
		typ world.EventType
	}{{other, world.EventRunCreated}, {waiting, world.EventRunCompleted}}
	for _, w := range want {
		u, err := sub.Next()
		if err != nil || u.Event == nil || u.Event.RunID != w.run || u.Event.Type() != w.typ {
			t.Fatalf("update %+v, %v: want %s of %s", u, err, w.typ, w.run)
		}
	}
}

func TestSubscribeErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subWorkflow, subStep)
	ctx := e.ctx()
	run := startWaiting(t, e, ctx, "sub-err-"+t.Name())
	for _, tc := range []struct {
		name string
		o    sdk.SubscribeOptions
		want error
	}{
		{"unknown run", sdk.SubscribeOptions{RunID: "wrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"}, world.ErrNotFound},
		{"bad cursor", sdk.SubscribeOptions{RunID: run, After: "x"}, world.ErrInvalid},
		{"bad type", sdk.SubscribeOptions{Types: []world.EventType{"nope"}}, world.ErrInvalid},
	} {
		if _, err := e.client.Subscribe(ctx, tc.o); !errors.Is(err, tc.want) {
			t.Errorf("%s: Subscribe = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSubscribeCloseWhileWaiting checks that Close from another goroutine
// ends a Next that waits for a commit.
func TestSubscribeCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subWorkflow, subStep)
	ctx := e.ctx()
	sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sub.Next()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	sub.Close()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after Close = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after Close")
	}
}

// TestSubscribeAllRunsFromSubscribe: a subscription to every run, with no
// cursor, follows them from the Subscribe call: a run started before the
// first Next is delivered whole.
func TestSubscribeAllRunsFromSubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subWorkflow, subStep)
	ctx := e.ctx()
	sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{Types: []world.EventType{world.EventRunCreated}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	run := startWaiting(t, e, ctx, "sub-now-"+t.Name())
	u, err := sub.Next()
	if err != nil || u.Event == nil || u.Event.RunID != run || u.Event.Type() != world.EventRunCreated {
		t.Fatalf("first update %+v, %v: want the run_created of the run started after Subscribe", u, err)
	}
}

// subSlowGate lets subSlow return (one test uses it).
var subSlowGate = make(chan struct{})

var subSlow = sdk.NewStep("sub-slow", func(ctx context.Context, _ string) (string, error) {
	select {
	case <-subSlowGate:
		return "late", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
})

// subOutlived starts subSlow without awaiting it and completes at once:
// the slow step records its result after the run's end.
var subOutlived = sdk.New("sub-outlived", func(ctx sdk.Context, _ string) (int, error) {
	subSlow.Go(ctx, "x")
	return subStep.Call(ctx, 2)
})

// TestSubscribeFollowsTheRestUntilDeactivated: a subscription to one run
// does not end at the run's terminal event while a step it started still
// runs: the step's late result and run_deactivated come, then io.EOF.
func TestSubscribeFollowsTheRestUntilDeactivated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, subOutlived, subSlow, subStep)
	ctx := e.ctx()
	run, err := subOutlived.Start(ctx, e.client, "")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := e.client.Subscribe(ctx, sdk.SubscribeOptions{RunID: run.ID()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var types []world.EventType
	for {
		u, err := sub.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, u.Event.Type())
		if u.Event.Type() == world.EventRunCompleted {
			close(subSlowGate) // the outcome is out: now let the slow step end
		}
	}
	end, late := -1, -1
	for i, ty := range types {
		switch {
		case ty == world.EventRunCompleted:
			end = i
		case ty == world.EventStepCompleted && end >= 0:
			late = i
		}
	}
	if end < 0 || late < 0 || types[len(types)-1] != world.EventRunDeactivated {
		t.Fatalf("updates %v: want run_completed, then the slow step's step_completed, ending with run_deactivated", types)
	}
}
