package dynamoworld

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestStepCompensationCodec(t *testing.T) {
	t.Parallel()
	runID, stepID := testIDs.New(world.PrefixRun), testIDs.New(world.PrefixStep)
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		comp *world.StepCompensation
	}{
		{"none", nil},
		{"declared", &world.StepCompensation{Step: "refund"}},
		{"running", &world.StepCompensation{Step: "refund", Attempt: 3, Interrupted: 1, LeaseExpiresAt: at, StartedAt: at.Add(-time.Minute)}},
		{"retrying", &world.StepCompensation{Step: "refund", Attempt: 1, RetryAfter: at, StartedAt: at, Error: &world.ErrorData{Type: "E", Message: "declined", Details: json.RawMessage(`{"k":1}`)}}},
		{"failed", &world.StepCompensation{Step: "refund", Attempt: 2, StartedAt: at, EndedAt: at.Add(time.Second), Error: &world.ErrorData{Message: "gone"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &world.Step{RunID: runID, StepID: stepID, StepName: "charge", Status: world.StepStatusCompensating, Attempt: 1,
				Output: json.RawMessage(`"done"`), CreatedAt: at, UpdatedAt: at, Compensation: tc.comp}
			enc, err := encodeStep(in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, has := enc.it[aCompStep]; has != (tc.comp != nil) {
				t.Fatalf("item has %s: %v, want %v", aCompStep, has, tc.comp != nil)
			}
			if (tc.comp != nil && tc.comp.Error != nil) != slices.Contains(enc.payloads, attrCompErr) {
				t.Fatalf("payloads %v: the compensation's error must be a payload (claim-checkable)", enc.payloads)
			}
			out, err := decodeStep(enc.it, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, in) {
				t.Fatalf("round trip\n got %+v (compensation %+v)\nwant %+v (compensation %+v)", out, out.Compensation, in, in.Compensation)
			}
		})
	}
}

// TestRunCompensationOnCommit: the run's compensation flag and counts
// travel on the commit item with the rest, and every attribute the rest
// writes is one a projected read of the newest commit asks for.
func TestRunCompensationOnCommit(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, r := range []*world.Run{
		{Status: world.RunStatusRunning},
		{Status: world.RunStatusFailed, Compensate: true, Compensations: world.Compensations{Owed: 1, Running: 2, Succeeded: 3, Failed: 4}, DeactivatedAt: at, Cleanup: world.CleanupDone},
		{Status: world.RunStatusCompleted, Compensations: world.Compensations{Owed: 2}},
	} {
		it := item{}
		encodeRest(it, r)
		for name := range it {
			if !slices.Contains(restAttrs(), name) {
				t.Errorf("encodeRest writes %s, which restAttrs does not list (ListRuns would not read it)", name)
			}
		}
		var got world.Run
		decodeRest(it, &got)
		if got.Compensate != r.Compensate || got.Compensations != r.Compensations || !got.DeactivatedAt.Equal(r.DeactivatedAt) || got.Cleanup != r.Cleanup {
			t.Errorf("round trip of %+v: got compensate %v counts %+v deactivated %v cleanup %q", r, got.Compensate, got.Compensations, got.DeactivatedAt, got.Cleanup)
		}
	}
}

// TestPlanResultCopiesCompensation: what Append returns shares nothing
// with the plan's steps, which the cache keeps.
func TestPlanResultCopiesCompensation(t *testing.T) {
	t.Parallel()
	st := &world.Step{StepID: "s", Compensation: &world.StepCompensation{Step: "refund", Attempt: 1}}
	pl := &plan{run: &world.Run{}, results: []world.EventResult{{Step: st}}}
	res := pl.result()
	res.Results[0].Step.Compensation.Attempt = 9
	if st.Compensation.Attempt != 1 {
		t.Fatal("a caller changing the returned step's compensation changed the plan's")
	}
}
