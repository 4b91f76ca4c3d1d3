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
		{"TooEarlyError", &world.TooEarlyError{StepID: stepID, RetryAfter: now}, 425},
		{"StepLeasedError", &world.StepLeasedError{StepID: stepID}, 409},
		{"RunExistsError", &world.RunExistsError{RunID: runID}, 409},
		{"LeaseHeldError", &world.LeaseHeldError{RunID: runID, Owner: "o"}, 409},
		{"CommitError of a 410", &world.CommitError{Index: 2, Err: refusal(world.ErrGone)}, 410},
		{"CommitError of a 425", &world.CommitError{Index: 1, Err: &world.TooEarlyError{}}, 425},
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
		{&world.TooEarlyError{StepID: stepID, RetryAfter: at}, world.ErrTooEarly, []string{stepID, "2026-01-02T03:04:05Z"}},
		{&world.StepLeasedError{StepID: stepID, Attempt: 3, LeaseExpiresAt: at}, world.ErrConflict, []string{stepID, "attempt 3"}},
		{&world.RunExistsError{RunID: runID}, world.ErrConflict, []string{runID}},
		{&world.RunExistsError{RunID: runID, IdempotencyKey: "k1"}, world.ErrConflict, []string{runID, `"k1"`}},
		{&world.LeaseHeldError{RunID: runID, Owner: "worker-7", ExpiresAt: at}, world.ErrLeaseHeld, []string{runID, "worker-7"}},
		{&world.CommitError{Index: 1, Err: &world.StepLeasedError{StepID: stepID}}, world.ErrConflict, []string{"event 1", stepID}},
		{&world.ExpiredError{RunID: runID, What: "input (s3://b/k)"}, world.ErrGone, []string{runID, "input (s3://b/k)", "expired"}},
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
	var leased *world.StepLeasedError
	if !errors.As(&world.CommitError{Err: &world.StepLeasedError{Attempt: 2}}, &leased) || leased.Attempt != 2 {
		t.Error("errors.As does not reach a typed refusal inside a CommitError")
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
