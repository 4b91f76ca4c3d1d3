package world_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	refusal := func(kind error) error {
		return &world.RefusalError{Kind: kind, EventType: world.EventStepStarted, Entity: stepID, Reason: "r"}
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"ErrNotFound", world.ErrNotFound, 404},
		{"wrapped ErrNotFound", fmt.Errorf("get: %w", world.ErrNotFound), 404},
		{"ErrConflict", world.ErrConflict, 409},
		{"ErrLeaseHeld", world.ErrLeaseHeld, 409},
		{"ErrGone", world.ErrGone, 410},
		{"ErrTooEarly", world.ErrTooEarly, 425},
		{"ErrInvalid", world.ErrInvalid, 400},
		{"refusal 404", refusal(world.ErrNotFound), 404},
		{"refusal 409", refusal(world.ErrConflict), 409},
		{"refusal 410", refusal(world.ErrGone), 410},
		{"refusal 400", refusal(world.ErrInvalid), 400},
		{"refusal 425", &world.RefusalError{Kind: world.ErrTooEarly, EventType: world.EventStepStarted, Entity: stepID, Until: now}, 425},
		{"lease held", &world.RefusalError{Kind: world.ErrLeaseHeld, Entity: runID, Holder: "o"}, 409},
		{"wrapped refusal of a 410", fmt.Errorf("commit: %w", &world.RefusalError{Kind: world.ErrGone, Index: 2}), 410},
		{"other", errors.New("disk on fire"), 500},
		{"context", context.DeadlineExceeded, 500},
	} {
		if got := world.Status(tc.err); got != tc.want {
			t.Errorf("Status(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		err      error
		sentinel error
		mentions []string
	}{
		{&world.RefusalError{Kind: world.ErrGone, EventType: world.EventStepStarted, Entity: stepID, Reason: "run is over"}, world.ErrGone, []string{"step_started", stepID, "run is over"}},
		{&world.RefusalError{Kind: world.ErrLeaseHeld, Entity: runID, Holder: "worker-7", Until: at, Reason: "leased by worker-7"},
			world.ErrLeaseHeld, []string{"run " + runID + ": leased by worker-7"}},
		{&world.RefusalError{Kind: world.ErrConflict, EventType: world.EventStepStarted, Entity: stepID, Index: 1, Reason: "r"},
			world.ErrConflict, []string{stepID, "event 1 of the commit"}},
		{&world.RefusalError{Kind: world.ErrGone, Entity: runID, Reason: "input (s3://b/k) has expired"},
			world.ErrGone, []string{"run " + runID + ": input (s3://b/k) has expired"}},
	} {
		if !errors.Is(tc.err, tc.sentinel) {
			t.Errorf("%T does not match %v", tc.err, tc.sentinel)
		}
		for _, m := range tc.mentions {
			if !strings.Contains(tc.err.Error(), m) {
				t.Errorf("%T message %q does not mention %q", tc.err, tc.err.Error(), m)
			}
		}
	}
	for _, s := range []error{world.ErrNotFound, world.ErrConflict, world.ErrGone, world.ErrTooEarly, world.ErrInvalid, world.ErrLeaseHeld, world.ErrLeaseLost, world.ErrClosed} {
		for _, o := range []error{world.ErrNotFound, world.ErrConflict, world.ErrGone, world.ErrTooEarly, world.ErrInvalid, world.ErrLeaseHeld, world.ErrLeaseLost, world.ErrClosed} {
			if s != o && errors.Is(s, o) {
				t.Errorf("sentinel %v matches %v", s, o)
			}
		}
	}
}

// TestRefusalMessageSpacing: a refusal of a run event validated before the
// run has an entity ID reads "run_created refused", with no double space.
func TestRefusalMessageSpacing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{world.ValidateEvent(world.Event{Data: &world.RunCreated{}}), "invalid request: run_created refused: workflowName required"},
		{world.ValidateEvent(world.Event{Data: &world.RunCreated{WorkflowName: " \t"}}), "run_created refused: workflowName required (not blank)"},
		{&world.RefusalError{Kind: world.ErrGone, EventType: world.EventStepStarted, Entity: stepID, Reason: "run is over"}, "step_started " + stepID + " refused: run is over"},
	} {
		if msg := tc.err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "  ") {
			t.Errorf("message %q, want it to hold %q and no double space", msg, tc.want)
		}
	}
}

// A run's streams have a default bound, and its refusal says which limit
// the run reached, in the words of the events limit.
func TestLimitErrorOfStreams(t *testing.T) {
	if got := (world.Limits{}).WithDefaults().MaxStreams; got != 10_000 {
		t.Fatalf("default MaxStreams = %d, want 10,000", got)
	}
	err := error(&world.LimitError{RunID: "wrun_1", Limit: "streams", Max: 1000, Size: 1001, What: `stream "s1000"`})
	want := `world: limit exceeded: run wrun_1: the run has reached its limit of 1000 streams (stream "s1000")`
	if err.Error() != want || !errors.Is(err, world.ErrLimitExceeded) || world.Status(err) != 413 {
		t.Fatalf("%q (status %d), want %q, 413", err, world.Status(err), want)
	}
}

// The refusals that replaced TooEarlyError, StepLeasedError and
// RunExistsError say what those did: the retry time, the attempt and its
// lease, the key and the run that took it.
func TestRefusalMessagesOfApply(t *testing.T) {
	t.Parallel()
	live := mkRun(world.RunStatusRunning)
	apply := func(s world.State, corr string, d world.EventData) error {
		_, err := world.Apply(s, world.Event{RunID: runID, EventID: eventID, CorrelationID: corr, Data: d}, now)
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"too early", apply(world.State{Run: live, Step: withRetry(mkStep(world.StepStatusPending, 1), now.Add(time.Second))}, stepID, &world.StepStarted{}),
			"world: too early: step_started " + stepID + " refused: may not start before 2026-03-04T05:06:08Z"},
		{"leased", apply(world.State{Run: live, Step: withLease(mkStep(world.StepStatusRunning, 2), now.Add(time.Second))}, stepID, &world.StepStarted{}),
			"world: conflict: step_started " + stepID + " refused: attempt 2 is running under a lease until 2026-03-04T05:06:08Z"},
		{"run exists", apply(world.State{Run: live}, "", &world.RunCreated{WorkflowName: "wf"}),
			"world: conflict: run_created " + runID + " refused: run already exists"},
		{"key taken", apply(world.State{IdempotencyRunID: otherID}, "", &world.RunCreated{WorkflowName: "wf", IdempotencyKey: "k1"}),
			"world: conflict: run_created " + otherID + ` refused: idempotency key "k1" already started run ` + otherID},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}
