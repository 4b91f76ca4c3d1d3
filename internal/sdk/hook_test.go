package sdk_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

type hookPayload struct {
	Message string `json:"message"`
	Done    bool   `json:"done,omitempty"`
}

type hookMeta struct {
	CustomData string `json:"customData"`
}

type received struct {
	Message    string
	CustomData string
}

// hookWorkflow receives payloads until one says done.
var hookWorkflow = sdk.New("hookWorkflow", func(ctx sdk.Context, in [2]string) ([]received, error) {
	h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: in[0], Metadata: hookMeta{CustomData: in[1]}})
	var out []received
	for {
		p, err := h.Receive(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, received{Message: p.Message, CustomData: in[1]})
		if p.Done {
			return out, nil
		}
	}
})

func TestHookPayloadsInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookWorkflow)
	ctx := e.ctx()
	token := "hook-order-" + t.Name()
	run, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "custom"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook registered", func() bool {
		_, err := e.client.GetHookByToken(ctx, token)
		return err == nil
	})
	h, err := e.client.GetHookByToken(ctx, token)
	if err != nil || h.RunID != run.ID() || string(h.Metadata) != `{"customData":"custom"}` {
		t.Fatalf("hook = %+v, %v", h, err)
	}
	for _, p := range []hookPayload{{Message: "one"}, {Message: "two"}, {Message: "three", Done: true}} {
		if _, err := e.client.ResumeHook(ctx, token, p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []received{{"one", "custom"}, {"two", "custom"}, {"three", "custom"}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// The token is free again once the run ended.
	_, err = e.client.ResumeHook(ctx, token, hookPayload{})
	mustNotFound(t, err, token)
}

func TestHookInvalidToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	_, err := e.client.GetHookByToken(ctx, "invalid")
	mustNotFound(t, err, "invalid")
	_, err = e.client.ResumeHook(ctx, "invalid", 1)
	mustNotFound(t, err, "invalid")
}

// mustNotFound fails t unless err is a *RequestError saying no active hook
// holds token.
func mustNotFound(t *testing.T, err error, token string) {
	t.Helper()
	nf := mustAs[*sdk.RequestError](t, err)
	if nf.Kind != world.ErrNotFound || nf.Token != token || !errors.Is(err, world.ErrNotFound) {
		t.Errorf("err = %v (%+v); want a hook not found, token %q", err, nf, token)
	}
}

func TestHookTokenReusableAfterRunEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookWorkflow)
	ctx := e.ctx()
	token := "reuse-" + t.Name()
	for i := range 2 {
		run, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "x"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "hook", func() bool {
			h, err := e.client.GetHookByToken(ctx, token)
			return err == nil && h.RunID == run.ID()
		})
		if _, err := e.client.ResumeHook(ctx, token, hookPayload{Message: "m", Done: true}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}

func TestHookConcurrentTokenConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookWorkflow)
	ctx := e.ctx()
	token := "conflict-" + t.Name()
	run1, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "1"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "run 1's hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
	run2, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "2"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run2.Result(ctx)
	rf := mustAs[*sdk.RunFailedError](t, err)
	hc := mustAs[*sdk.HookConflictError](t, err)
	if rf.Code != world.CodeUserError || hc.ConflictingRunID != run1.ID() || hc.Token != token {
		t.Errorf("run 2: %v (code %s, conflicting %s)", err, rf.Code, hc.ConflictingRunID)
	}
	if want := "already in use by another workflow"; !contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if _, err := e.client.ResumeHook(ctx, token, hookPayload{Message: "m", Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := run1.Result(ctx); err != nil || len(got) != 1 {
		t.Fatalf("run 1 = %v, %v", got, err)
	}
}

type conflictResult struct {
	ConflictRunID string
	Status        world.RunStatus
	StepResult    string
	Data          string
}

func TestHookConflict(t *testing.T) {
	t.Parallel()
	status := sdk.NewStep("run-status", func(ctx context.Context, runID string) (world.RunStatus, error) {
		return statusOfID(ctx, sdk.ClientFrom(ctx), runID)
	})
	echo := sdk.NewStep("echo-step", func(ctx context.Context, s string) (string, error) { return s, nil })
	getConflict := sdk.New("hookGetConflict", func(ctx sdk.Context, in [2]string) (conflictResult, error) {
		token, mode := in[0], in[1]
		h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: token})
		var out conflictResult
		var stepF sdk.Future[string]
		switch mode {
		case "prior":
			s, err := echo.Call(ctx, "step_completed")
			if err != nil {
				return out, err
			}
			out.StepResult = s
		case "parallel":
			stepF = echo.Go(ctx, "step_completed")
		}
		id, err := h.Conflict(ctx)
		if err != nil {
			return out, err
		}
		out.ConflictRunID = id
		if mode == "parallel" {
			if out.StepResult, err = stepF.Get(ctx); err != nil {
				return out, err
			}
		}
		if id != "" {
			if out.Status, err = status.Call(ctx, id); err != nil {
				return out, err
			}
			out.Data = "hook_token_conflict_detected"
			return out, nil
		}
		out.Data = "hook_registered_without_payload"
		return out, nil
	})
	e := newEnv(t, getConflict, hookWorkflow, status, echo)
	for _, mode := range []string{"alone", "prior", "parallel"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := e.ctx()
			run, err := getConflict.Start(ctx, e.client, [2]string{"gc-" + mode, mode})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.ConflictRunID != "" || got.Data != "hook_registered_without_payload" {
				t.Errorf("got %+v", got)
			}
			if mode != "alone" && got.StepResult != "step_completed" {
				t.Errorf("step result = %q", got.StepResult)
			}
			evs := e.events(run.ID())
			if countEvents(evs, world.EventHookCreated) != 1 || countEvents(evs, world.EventHookReceived) != 0 {
				t.Errorf("events: %d hook_created, %d hook_received", countEvents(evs, world.EventHookCreated), countEvents(evs, world.EventHookReceived))
			}
			if mode != "alone" && (countEvents(evs, world.EventStepCreated) < 1 || countEvents(evs, world.EventStepCompleted) < 1) {
				t.Error("no step events")
			}
		})
	}
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		ctx := e.ctx()
		token := "gc-held"
		run1, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "1"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "run 1's hook", func() bool { _, err := e.client.GetHookByToken(ctx, token); return err == nil })
		run2, err := getConflict.Start(ctx, e.client, [2]string{token, "alone"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := run2.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.ConflictRunID != run1.ID() || got.Status != world.RunStatusRunning || got.Data != "hook_token_conflict_detected" {
			t.Errorf("got %+v, want conflict with %s", got, run1.ID())
		}
		if _, err := e.client.ResumeHook(ctx, token, hookPayload{Done: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := run1.Result(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHookConflictThenStepInParallel(t *testing.T) {
	t.Parallel()
	// A waits (up to 15 s) for B to start: B, created after the hook's
	// conflict check, starts while A runs only if neither the check nor B
	// waits for A. No race between durations decides the outcome.
	bStarted := make(chan struct{})
	var once sync.Once
	stamp := sdk.NewStep("stamped", func(ctx context.Context, waitForB bool) ([2]time.Time, error) {
		start := time.Now()
		if waitForB {
			select {
			case <-bStarted:
			case <-time.After(15 * time.Second):
			case <-ctx.Done():
				return [2]time.Time{}, ctx.Err()
			}
		} else {
			once.Do(func() { close(bStarted) })
		}
		return [2]time.Time{start, time.Now()}, nil
	})
	wf := sdk.New("conflictThenStep", func(ctx sdk.Context, token string) ([2][2]time.Time, error) {
		a := stamp.Go(ctx, true)
		h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: token})
		if _, err := h.Conflict(ctx); err != nil {
			return [2][2]time.Time{}, err
		}
		b, err := stamp.Call(ctx, false)
		if err != nil {
			return [2][2]time.Time{}, err
		}
		aa, err := a.Get(ctx)
		return [2][2]time.Time{aa, b}, err
	})
	e := newEnv(t, wf, stamp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := wf.Start(ctx, e.client, "ctsp")
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, b := got[0], got[1]
	if !b[0].Before(a[1]) {
		t.Errorf("B started %s, after A ended %s (A waited %s for it)", b[0], a[1], a[1].Sub(a[0]))
	}
}

func TestHookDisposeFreesToken(t *testing.T) {
	t.Parallel()
	type result struct {
		Disposed bool
		Conflict string
		Data     string
	}
	wf := sdk.New("hookDispose", func(ctx sdk.Context, in struct {
		Token string
		Sleep time.Duration
	}) (result, error) {
		h := sdk.NewHook[hookPayload](ctx, sdk.HookOptions{Token: in.Token})
		id, err := h.Conflict(ctx)
		if err != nil {
			return result{}, err
		}
		h.Dispose(ctx)
		if err := sdk.Sleep(ctx, in.Sleep); err != nil {
			return result{}, err
		}
		return result{Disposed: true, Conflict: id, Data: "workflow_completed"}, nil
	})
	e := newEnv(t, wf)
	ctx := e.ctx()
	type input = struct {
		Token string
		Sleep time.Duration
	}
	run1, err := wf.Start(ctx, e.client, input{"dispose-me", 800 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(run1.ID(), world.EventWaitCreated)
	if _, err := e.client.GetHookByToken(ctx, "dispose-me"); err == nil {
		t.Fatal("token still held while run 1 sleeps")
	}
	run2, err := wf.Start(ctx, e.client, input{"dispose-me", 0})
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range []*sdk.Run[result]{run1, run2} {
		got, err := run.Result(ctx)
		if err != nil || !got.Disposed || got.Conflict != "" || got.Data != "workflow_completed" {
			t.Errorf("run %d = %+v, %v", i+1, got, err)
		}
	}
	if st, _ := statusOf(ctx, run1); st != world.RunStatusCompleted {
		t.Errorf("run 1 status %s", st)
	}
}

func TestHookWithSleep(t *testing.T) {
	t.Parallel()
	type event struct {
		Type string
		ID   int
	}
	type processed struct {
		Processed bool
		Type      string
		ID        int
	}
	process := sdk.NewStep("process", func(ctx context.Context, ev event) (processed, error) {
		return processed{true, ev.Type, ev.ID}, nil
	})
	wf := sdk.New("hookWithSleep", func(ctx sdk.Context, token string) ([]processed, error) {
		h := sdk.NewHook[event](ctx, sdk.HookOptions{Token: token})
		_ = sdk.NewTimer(ctx, 24*time.Hour) // never awaited
		var out []processed
		for {
			ev, err := h.Receive(ctx)
			if err != nil {
				return nil, err
			}
			p, err := process.Call(ctx, ev)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			if ev.Type == "done" {
				return out, nil
			}
		}
	})
	e := newEnv(t, wf, process)
	ctx := e.ctx()
	run, err := wf.Start(ctx, e.client, "hws")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook", func() bool { _, err := e.client.GetHookByToken(ctx, "hws"); return err == nil })
	for _, ev := range []event{{"subscribe", 1}, {"subscribe", 2}, {"done", 0}} {
		if _, err := e.client.ResumeHook(ctx, "hws", ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := run.Result(ctx)
	want := []processed{{true, "subscribe", 1}, {true, "subscribe", 2}, {true, "done", 0}}
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestResumeOrStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, hookWorkflow)
	ctx := e.ctx()
	token := "resume-or-start"
	_, err := e.client.ResumeHook(ctx, token, hookPayload{Message: "delivered", Done: true})
	mustNotFound(t, err, token)
	run, err := hookWorkflow.Start(ctx, e.client, [2]string{token, "x"}, sdk.WithIdempotencyKey("owner"))
	if err != nil {
		t.Fatal(err)
	}
	var h *sdk.HookInfo
	waitFor(t, "resume", func() bool {
		h, err = e.client.ResumeHook(ctx, token, hookPayload{Message: "delivered", Done: true})
		return err == nil
	})
	if h.RunID != run.ID() {
		t.Errorf("resumed run %s, want %s", h.RunID, run.ID())
	}
	got, err := run.Result(ctx)
	if err != nil || len(got) != 1 || got[0].Message != "delivered" {
		t.Errorf("got %+v, %v", got, err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
