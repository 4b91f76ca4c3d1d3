package skeintest_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/skeinflow/skein/internal/knobs"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/redact"
	"github.com/skeinflow/skein/internal/runrules"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/workflow"
	"github.com/skeinflow/skein/world"
)

// Workflows whose hook tokens derive from the run's secret (a generated
// token, a child run's) or do not (a token of your own).
var (
	genHook = workflow.New("gen-hook", func(ctx workflow.Context, _ string) (int, error) {
		return workflow.NewHook[int](ctx, workflow.HookOptions{}).Receive(ctx)
	})
	ownHook = workflow.New("own-hook", func(ctx workflow.Context, tok string) (int, error) {
		return workflow.NewHook[int](ctx, workflow.HookOptions{Token: tok}).Receive(ctx)
	})
	withChild = workflow.New("with-child", func(ctx workflow.Context, tok string) (int, error) {
		return ownHook.Call(ctx, tok)
	})
)

// TestHistoryWithoutTokens: a history printed without its secrets (skein
// runs events without -show-tokens: no secret in run_created) fails the
// check with a *NoTokensError saying so, not with a divergence, when the
// run's hook tokens derive from its secret (a generated token, a child
// run); the same run's full history checks, and a run whose tokens are its
// own checks either way.
func TestHistoryWithoutTokens(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	if err := reg.Register(genHook, ownHook, withChild); err != nil {
		t.Fatal(err)
	}
	w, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	worker, err := worker.New(worker.Config{World: w, Registry: reg}, knobs.WithPollWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = worker.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done; cancel() })

	for _, tc := range []struct {
		workflow, input string
		needsSecret     bool
	}{
		{"gen-hook", "", true},
		{"with-child", "child/1", true},
		{"own-hook", "own/1", false},
	} {
		id, err := worker.Client().Start(ctx, tc.workflow, tc.input)
		if err != nil {
			t.Fatal(err)
		}
		events := untilHook(ctx, t, w, id)
		full, redacted := history(t, events, false), history(t, events, true)
		t.Run(tc.workflow, func(t *testing.T) {
			t.Parallel()
			rep, err := skeintest.CheckHistory(reg, bytes.NewReader(full))
			if err != nil || !rep.Compatible() {
				t.Fatalf("the full history: %v\n%v", err, rep)
			}
			rep, err = skeintest.CheckHistory(reg, bytes.NewReader(redacted))
			if !tc.needsSecret {
				if err != nil || !rep.Compatible() {
					t.Fatalf("the history without tokens of a run with its own tokens: %v\n%v", err, rep)
				}
				return
			}
			events, err2 := skeintest.ReadHistories(bytes.NewReader(redacted), "redacted")
			if err2 != nil {
				t.Fatal(err2)
			}
			if rr, err2 := sdk.CheckLog(reg, events[0].Events); err2 != nil || rr.Divergence == nil || !strings.Contains(rr.Divergence.Message, "no run secret") {
				t.Errorf("CheckLog of the history without tokens does not say it lacks the secret: %v, %+v", err2, rr)
			}
			var nt *skeintest.NoTokensError
			if !errors.As(err, &nt) || !errors.Is(err, skeintest.ErrNoTokens) || nt.RunID != id || nt.WorkflowName != tc.workflow {
				t.Fatalf("CheckHistory without tokens = %v, %v; want a *NoTokensError for run %s", rep, err, id)
			}
			if rr, _ := sdk.CheckLog(reg, events[0].Events); rr == nil || rr.Divergence == nil || nt.Divergence != rr.Divergence.Message {
				t.Errorf("NoTokensError.Divergence %q, want the replay's divergence", nt.Divergence)
			}
			for _, want := range []string{"exported without tokens", "its run_created has no secret", "cannot be checked", "skein runs export", "-show-tokens"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// untilHook waits until run id's log has a hook_created, and returns it.
func untilHook(ctx context.Context, t *testing.T, w world.Storage, id string) []world.Event {
	t.Helper()
	for {
		events, err := runrules.AllEvents(ctx, w, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Type() == world.EventHookCreated {
				return events
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s never created a hook", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// history is events as a history file, redacted as skein runs events
// prints them without -show-tokens.
func history(t *testing.T, events []world.Event, redacted bool) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, ev := range events {
		if redacted {
			ev = redact.Event(ev)
		}
		if err := skeintest.WriteHistory(&b, []world.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}
