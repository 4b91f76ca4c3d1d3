//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// flakyHooks is a World whose first hook_received Appends fail with err,
// fails times (a World under load, or a broken one).
type flakyHooks struct {
	world.World
	fails atomic.Int32
	err   error
}

func (f *flakyHooks) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if _, ok := p.Events[0].Data.(*world.HookReceived); ok && f.fails.Add(-1) >= 0 {
		return nil, f.err
	}
	return f.World.Append(ctx, p)
}

// TestChaosResumerRetriesAndReports: the chaos suite's resumer delivers a
// payload through errors a World may return under load, logging each, and
// reports as a violation a refusal that says the hook is gone while the run
// still waits on it with no payload; a run that ended is no violation.
func TestChaosResumerRetriesAndReports(t *testing.T) {
	t.Parallel()
	refused := &world.RefusalError{Kind: world.ErrNotFound, EventType: world.EventHookReceived, Entity: "hook_x", Reason: "hook does not exist"}
	for _, tc := range []struct {
		name      string
		fails     int32
		err       error
		end       bool // the run ends before the payload is sent
		errors    int  // errors logged
		payloads  int  // hook_received in the log
		violation string
	}{
		{name: "delivered", payloads: 1},
		{name: "transient errors retried", fails: 3, err: errors.New("dynamoworld: DynamoDB TransactWriteItems: connection reset"), errors: 3, payloads: 1},
		{name: "hook gone while waiting", fails: 1, err: refused, errors: 1, violation: "found no hook"},
		{name: "run ended", end: true, errors: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			lw, err := localworld.Open(localworld.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lw.Close()
			w := &flakyHooks{World: lw, err: tc.err}
			w.fails.Store(tc.fails)
			c, err := client.New(client.Config{World: w})
			if err != nil {
				t.Fatal(err)
			}
			runID := waitingChaosRun(t, lw, "k", tc.end)
			var logged, notes []string
			err = resumeChaosHook(ctx, c, runID, "k", 1,
				func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) },
				func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
			if tc.violation == "" && err != nil || tc.violation != "" && (err == nil || !strings.Contains(err.Error(), tc.violation)) {
				t.Errorf("violation %v, want %q", err, tc.violation)
			}
			if len(logged) != tc.errors {
				t.Errorf("logged %d errors, want %d: %q", len(logged), tc.errors, logged)
			}
			evs, err := runEvents(ctx, lw, runID)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ev := range evs {
				if ev.Type() == world.EventHookReceived {
					n++
				}
			}
			if n != tc.payloads {
				t.Errorf("%d payloads in the log, want %d (notes %q)", n, tc.payloads, notes)
			}
		})
	}
}

// waitingChaosRun writes a run that waits on the chaos hook of key, and
// ends it when end is set.
func waitingChaosRun(t *testing.T, w world.World, key string, end bool) string {
	t.Helper()
	ids := world.NewIDSource(nil, nil)
	runID := ids.New(world.PrefixRun)
	evs := []world.EventInput{
		{Data: &world.RunCreated{WorkflowName: demo.Chaos.Name()}},
		{Data: &world.RunStarted{}},
		{CorrelationID: ids.New(world.PrefixHook), Data: &world.HookCreated{Token: demo.ChaosHookToken(key)}},
	}
	if end {
		evs = append(evs, world.EventInput{Data: &world.RunCancelled{Reason: "gone"}})
	}
	if _, err := w.Append(context.Background(), &world.AppendParams{RunID: runID, Events: evs}); err != nil {
		t.Fatal(err)
	}
	return runID
}
