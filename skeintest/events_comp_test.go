package skeintest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/world"
)

// TestFormatEventsCompensation: FormatEvents names the compensated step,
// its compensation, the attempt, the retry time and the error of comp_*
// events, and a step's compensation in its step_created.
func TestFormatEventsCompensation(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bad := &world.ErrorData{Message: "bank down"}
	for _, tc := range []struct {
		data world.EventData
		want string
	}{
		{&world.StepCreated{StepName: "charge", Compensation: "refund"}, "step_created     charge (undo: refund)"},
		{&world.CompStarted{Compensation: "refund", Attempt: 2}, "comp_started     charge undo refund attempt 2"},
		{&world.CompRetryScheduled{Error: bad, RetryAfter: at}, "comp_retry_scheduled  charge at 2026-01-02T03:04:05.000Z: bank down"},
		{&world.CompSucceeded{}, "comp_succeeded   charge"},
		{&world.CompFailed{Error: bad}, "comp_failed      charge: bank down"},
	} {
		t.Run(string(typeOf(tc.data)), func(t *testing.T) {
			t.Parallel()
			events := []world.Event{
				{Seq: 1, CorrelationID: "step_1", CreatedAt: at, Data: &world.StepCreated{StepName: "charge"}},
				{Seq: 2, CorrelationID: "step_1", CreatedAt: at, Data: tc.data},
			}
			lines := strings.Split(strings.TrimSpace(skeintest.FormatEvents(events)), "\n")
			if !strings.HasSuffix(lines[1], tc.want) {
				t.Errorf("got %q, want it to end with %q", lines[1], tc.want)
			}
		})
	}
}
