package world_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, m := range []world.Message{
		{RunID: runID},
		{RunID: runID, StepID: stepID, NotBefore: at, RequestedAt: at.Add(-time.Hour), Hop: 3},
		{RunID: runID, StepIDs: []string{stepID, stepID}},
		{RunID: runID, StepID: stepID, StepIDs: []string{stepID}},
		{RunID: runID, HoldAttempt: 3},
		{RunID: runID, StepID: stepID, Refused: 4},
	} {
		b, err := world.EncodeMessage(m)
		if err != nil {
			t.Fatalf("EncodeMessage(%+v): %v", m, err)
		}
		got, err := world.DecodeMessage(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("DecodeMessage(%s) = %+v, %v; want %+v", b, got, err, m)
		}
	}
}

func TestMessageInvalid(t *testing.T) {
	t.Parallel()
	for _, m := range []world.Message{{}, {RunID: stepID}, {RunID: runID, StepID: hookID}, {RunID: runID, StepID: "step_x"}, {RunID: runID, StepIDs: []string{stepID, hookID}}, {RunID: runID, HoldAttempt: -1}, {RunID: runID, Refused: -1}} {
		if _, err := world.EncodeMessage(m); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("EncodeMessage(%+v): %v, want ErrInvalid", m, err)
		}
	}
	for _, body := range []string{``, `nope`, `[]`, `{"runId":5}`, `{}`, `{"runId":"` + runID + `","stepId":"wait_x"}`} {
		if _, err := world.DecodeMessage([]byte(body)); !errors.Is(err, world.ErrInvalid) {
			t.Errorf("DecodeMessage(%q): %v, want ErrInvalid", body, err)
		}
	}
}
