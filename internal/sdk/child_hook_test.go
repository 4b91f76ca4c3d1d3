package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

var (
	halver       = sdk.New("halver", func(ctx sdk.Context, n int) (int, error) { return n / 2, nil })
	thenApproved = sdk.New("child-then-approve", func(ctx sdk.Context, n int) (string, error) {
		half, err := halver.Call(ctx, n)
		if err != nil {
			return "", err
		}
		note, err := sdk.NewHook[string](ctx, sdk.HookOptions{Token: fmt.Sprintf("approve/%d", n)}).Receive(ctx)
		if err != nil {
			return "", err
		}
		// A suspension before the end: a run recorded without the child
		// hook's disposal commits it here.
		return fmt.Sprintf("%d %s", half, note), sdk.Sleep(ctx, time.Millisecond)
	})
)

// activeHooks returns the tokens of the run's active hooks.
func activeHooks(t *testing.T, w world.World, runID string) []string {
	t.Helper()
	p, err := w.ListHooks(context.Background(), &world.ListHooksParams{RunID: runID, Pagination: world.Pagination{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range p.Items {
		out = append(out, h.Token)
	}
	return out
}

// waitActive polls until the run's active hooks include token.
func waitActive(t *testing.T, w world.World, runID, token string) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got := activeHooks(t, w, runID); strings.Contains(strings.Join(got, "\n"), token) {
			return got
		}
	}
	t.Fatalf("run %s never held hook %q", runID, token)
	return nil
}

// TestChildHookDisposedOnOutcome: once a child run's outcome reaches its
// parent, the internal hook it came on is disposed (hook_disposed in the
// parent's log, after the hook_received), so the parent's active hooks are
// the ones its code waits on. A log recorded before such disposals (the
// same log without the hook_disposed) replays without a divergence, and a
// worker that picks up such a run records the disposal at its next
// suspension and finishes it.
func TestChildHookDisposedOnOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, thenApproved, halver)
	ctx := e.ctx()
	run, err := thenApproved.Start(ctx, e.client, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitActive(t, e.lw, run.ID(), "approve/8"); len(got) != 1 {
		t.Fatalf("active hooks of the parent %q, want only approve/8 (the child's hook disposed)", got)
	}
	var childHook string
	var received, disposed bool
	log := e.events(run.ID())
	for _, ev := range log {
		switch d := ev.Data.(type) {
		case *world.HookCreated:
			if sdk.IsInternalToken(d.Token) {
				childHook = ev.CorrelationID
			}
		case *world.HookReceived:
			received = received || ev.CorrelationID == childHook
		case *world.HookDisposed:
			disposed = disposed || (received && ev.CorrelationID == childHook)
		}
	}
	if childHook == "" || !disposed {
		t.Fatalf("the parent's log has no hook_disposed for the child's hook %q after its outcome", childHook)
	}

	// The same run as a log recorded before the disposal existed.
	var old []world.Event
	for _, ev := range log {
		if _, ok := ev.Data.(*world.HookDisposed); !ok {
			ev.Seq = int64(len(old) + 1)
			old = append(old, ev)
		}
	}
	rep, err := sdk.CheckLog(e.reg, old)
	if err != nil || rep.Divergence != nil {
		t.Fatalf("CheckLog of the log without hook_disposed: %+v, %v; want no divergence", rep, err)
	}
	e2 := newEnv(t, thenApproved, halver)
	for _, ev := range old {
		if _, err := e2.lw.Append(ctx, &world.AppendParams{RunID: run.ID(), Events: []world.EventInput{{CorrelationID: ev.CorrelationID, Data: ev.Data}}}); err != nil {
			t.Fatalf("copy %s: %v", ev.Type(), err)
		}
	}
	if _, err := e2.client.ResumeHook(ctx, "approve/8", "ok"); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := e2.client.Result(ctx, run.ID(), &out); err != nil || out != "4 ok" {
		t.Fatalf("the old run with today's engine: %q, %v; want \"4 ok\"", out, err)
	}
	if n := count(e2.events(run.ID()), world.EventHookDisposed); n != 1 {
		t.Errorf("the old run's log has %d hook_disposed after it went on, want 1 (the child's hook)", n)
	}
}

func count(evs []world.Event, typ world.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type() == typ {
			n++
		}
	}
	return n
}

// TestDivergenceNamesChildWorkflow: a divergence that involves the hook of
// a child run names the child's workflow, on the log's side (the code no
// longer calls the child) and on the code's (the code now calls one).
func TestDivergenceNamesChildWorkflow(t *testing.T) {
	t.Parallel()
	approveOnly := func(name string) *sdk.Workflow[int, string] {
		return sdk.New(name, func(ctx sdk.Context, n int) (string, error) {
			return sdk.NewHook[string](ctx, sdk.HookOptions{Token: fmt.Sprintf("approve/%d", n)}).Receive(ctx)
		})
	}
	withChild := func(name string) *sdk.Workflow[int, string] {
		return sdk.New(name, func(ctx sdk.Context, n int) (string, error) {
			if _, err := halver.Call(ctx, n); err != nil {
				return "", err
			}
			return sdk.NewHook[string](ctx, sdk.HookOptions{Token: fmt.Sprintf("approve/%d", n)}).Receive(ctx)
		})
	}
	for _, tc := range []struct {
		name           string
		recorded, code func(string) *sdk.Workflow[int, string]
		logged, asked  string
	}{
		{"child call removed", withChild, approveOnly, `a child run of workflow "halver"`, `hook with token "approve/3"`},
		{"child call added", approveOnly, withChild, `hook_created for token "approve/3"`, `a child run of workflow "halver"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "divchild-" + strings.ReplaceAll(tc.name, " ", "-")
			recorded := tc.recorded(name)
			e := newEnv(t, recorded, halver)
			ctx := e.ctx()
			run, err := recorded.Start(ctx, e.client, 3)
			if err != nil {
				t.Fatal(err)
			}
			waitActive(t, e.lw, run.ID(), "approve/3")
			now := sdk.NewRegistry().MustRegister(tc.code(name), halver)
			rep, err := sdk.CheckLog(now, e.events(run.ID()))
			if err != nil || rep.Divergence == nil {
				t.Fatalf("CheckLog: %+v, %v; want a divergence", rep, err)
			}
			if d := rep.Divergence; !strings.Contains(d.Logged, tc.logged) || !strings.Contains(d.Asked, tc.asked) {
				t.Errorf("divergence %q\nwant the log's side to say %q and the code's %q", d.Message, tc.logged, tc.asked)
			}
		})
	}
}
