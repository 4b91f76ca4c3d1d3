//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// waitAllEnded calls a run stuck only when nothing could move it: while the
// work queue holds a message, a run that has not changed for longer than
// the quiet period is waiting for it, not stuck (the loaded trio's runs
// were "stuck" after 4 s of quiet on a 5-minute clock, with their messages
// in the queue).
func TestWaitAllEndedJudgesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lw, err := localworld.Open(localworld.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	const runID = "wrun_01KB0000000000000000000000"
	if _, err := lw.Append(ctx, &world.AppendParams{RunID: runID, Events: []world.EventInput{{Data: &world.RunCreated{WorkflowName: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	const busyReads = 8 // the queue holds a message for the first reads
	reads := 0
	busy := func() (bool, error) {
		reads++
		return reads <= busyReads, nil
	}
	stuck := waitAllEnded(ctx, t, lw, busy, time.Millisecond, time.Hour)
	if len(stuck) != 1 {
		t.Fatalf("stuck = %q, want the one run", stuck)
	}
	if reads <= busyReads {
		t.Fatalf("the run was called stuck after %d reads of the queue, while it still held a message (%d reads)", reads, busyReads)
	}
}

// deadlineReceives finds the receives the flow function failed because it
// ran out of time, and only those: a message failed for another reason
// stays a violation in the DLQ.
func TestDeadlineReceives(t *testing.T) {
	t.Parallel()
	recs := []map[string]any{
		{"message": "handler: message still in progress at the deadline; reported failed", "messageId": "a", "attempt": 1.0},
		{"message": "handler: no time left to start the message; reported failed", "messageId": "b", "attempt": 2.0},
		{"message": "handler: message cut off at the deadline; reported failed", "messageId": "c", "attempt": 3.0},
		{"message": "handler: message failed; reported for retry", "messageId": "d", "attempt": 1.0},
		{"message": "run completed", "run": "wrun_x"},
	}
	got := deadlineReceives(recs)
	want := map[string]bool{"a#1": true, "b#2": true, "c#3": true}
	if len(got) != len(want) {
		t.Fatalf("deadlineReceives = %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("deadlineReceives = %v, want %v", got, want)
		}
	}
}
