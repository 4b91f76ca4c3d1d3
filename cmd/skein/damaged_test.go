package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// TestRetryWakesALiveRun: a run whose store was damaged had its messages
// dropped (nothing written), and once restored nothing woke it. runs
// retry of a pending or running run now sends it a continuation (it
// refused: "not held; there is nothing to retry").
func TestRetryWakesALiveRun(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1 := evolve(pack)
	var id string
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		r, err := v1.Start(ctx, c, "wake/1")
		if err != nil {
			t.Fatal(err)
		}
		id = r.ID()
		for {
			if _, err := c.GetHookByToken(ctx, "wake/1"); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the hook never appeared")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	cli("-db", db, "runs", "retry", id).expect(t, 0, "run "+id+" (running) woken")
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ds, err := w.Receive(context.Background(), &world.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var woken bool
	for _, d := range ds {
		var m world.Message
		woken = woken || json.Unmarshal(d.Body, &m) == nil && m.RunID == id && m.StepID == ""
	}
	if !woken {
		t.Fatalf("no continuation of run %s queued: %d messages", id, len(ds))
	}
}

// TestDamagedRunMessage: a write refused because the run is damaged says
// so, that nothing was written, and how to recover; other errors are left
// as they are.
func TestDamagedRunMessage(t *testing.T) {
	cause := fmt.Errorf("%w: dynamoworld: table t, run wrun_x: events 4-4 are missing", world.ErrCorrupt)
	got := damaged("wrun_x", "cancelled", fmt.Errorf("workflow: cancel run wrun_x: %w", cause)).Error()
	for _, want := range []string{"run wrun_x is damaged", "not cancelled and nothing was written", "events 4-4 are missing", "skein runs retry wrun_x"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	other := fmt.Errorf("boom")
	if damaged("wrun_x", "cancelled", other) != other {
		t.Error("an error that is not world.ErrCorrupt was changed")
	}
}

// TestRetryRestsAnEndedRun: a run that has ended but is not at rest (no
// run_deactivated yet: its rest was owed) and whose messages were dropped
// stayed so for good: runs retry refused it ("is cancelled, not held;
// there is nothing to retry"). It now wakes it, a worker finishes the rest
// and the run comes to rest; a run at rest is refused, saying so.
func TestRetryRestsAnEndedRun(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/skein.db"
	v1 := evolve(pack)
	var id string
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		r, err := v1.Start(ctx, c, "rest/1")
		if err != nil {
			t.Fatal(err)
		}
		id = r.ID()
		for {
			if _, err := c.GetHookByToken(ctx, "rest/1"); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the hook never appeared")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	// No worker runs: the cancel ends the run, and its messages are
	// dropped, as a delivery to a damaged run is.
	cli("-db", db, "runs", "cancel", id).expect(t, 0, "cancelled run "+id)
	drain(t, db)
	if r := openRun(t, db, id); r.Status != world.RunStatusCancelled || r.Deactivated() {
		t.Fatalf("run %s is %s (deactivated %v), want cancelled and not at rest", id, r.Status, r.Deactivated())
	}
	cli("-db", db, "runs", "retry", id).expect(t, 0, "run "+id+" (cancelled, not at rest) woken")
	deployed(t, db, v1, pack, func(ctx context.Context, c *client.Client) {
		for {
			r, err := sdk.ClientWorld(c).GetRun(ctx, &world.GetRunParams{RunID: id})
			if err == nil && r.Deactivated() {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("run %s never came to rest: %v", id, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	cli("-db", db, "runs", "retry", id).expect(t, 1, "is cancelled and at rest, not held; there is nothing to retry")
}

// drain acknowledges every message queued in the store at db.
func drain(t *testing.T, db string) {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	for {
		ds, err := w.Receive(ctx, &world.ReceiveParams{Max: 10, Visibility: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			if err := w.Ack(ctx, &world.AckParams{Receipt: d.Receipt}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// openRun reads run id from the store at db.
func openRun(t *testing.T, db, id string) *world.Run {
	t.Helper()
	w, err := localworld.Open(localworld.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := w.GetRun(context.Background(), &world.GetRunParams{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDamagedHookMessage: hooks resume refused because the hook's run is
// damaged gave the World's error and no advice (runs cancel, fail and
// retry did). It now says so, that nothing was written, and how to
// recover, naming the run when the hook was read.
func TestDamagedHookMessage(t *testing.T) {
	cause := fmt.Errorf("%w: dynamoworld: table t, run wrun_x: events 4-4 are missing", world.ErrCorrupt)
	got := damagedHook("approve/1", "wrun_x", fmt.Errorf("append: %w", cause)).Error()
	for _, want := range []string{"run wrun_x is damaged", `not resumed (hook "approve/1") and nothing was written`, "events 4-4 are missing", "skein runs retry wrun_x"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	got = damagedHook("approve/1", "", cause).Error()
	for _, want := range []string{`hook "approve/1" or its run is damaged`, "nothing was written", "events 4-4 are missing", "skein runs retry <runId>"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	other := fmt.Errorf("boom")
	if damagedHook("approve/1", "", other) != other || damagedHook("approve/1", "wrun_x", other) != other {
		t.Error("an error that is not world.ErrCorrupt was changed")
	}
}
