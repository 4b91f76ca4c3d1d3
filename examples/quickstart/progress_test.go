package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestProgressCompensation: the progress lines tell a step's undo, its
// failed attempts and its outcome, and the watcher follows a run past its
// end while the compensations its end asked for are still to come.
func TestProgressCompensation(t *testing.T) {
	t.Parallel()
	bad := &world.ErrorData{Message: "bank down"}
	ev := func(corr string, d world.EventData) world.Event { return world.Event{CorrelationID: corr, Data: d} }
	base := []world.Event{
		ev("s1", &world.StepCreated{StepName: "charge-card", Compensation: "refund-card"}),
		ev("s1", &world.StepStarted{Attempt: 1}),
		ev("s1", &world.StepCompleted{StepName: "charge-card"}),
		ev("s2", &world.StepCreated{StepName: "ship"}),
		ev("s2", &world.StepStarted{Attempt: 1}),
		ev("s2", &world.StepFailed{Error: &world.ErrorData{Message: "no truck"}}),
	}
	failed := ev("", &world.RunFailed{ErrorCode: world.CodeUserError, Error: &world.ErrorData{Message: "no truck"}, Compensate: true})
	for _, tc := range []struct {
		name    string
		log     []world.Event
		pending bool
		want    []string
	}{
		{"owed after the end", []world.Event{failed}, true, []string{"✗ run failed (USER_ERROR): no truck"}},
		{"not asked for", []world.Event{ev("", &world.RunFailed{ErrorCode: world.CodeUserError, Error: bad})}, false, nil},
		{"retried then undone", []world.Event{failed,
			ev("s1", &world.CompStarted{Compensation: "refund-card", Attempt: 1}),
			ev("s1", &world.CompRetryScheduled{Error: bad}),
			ev("s1", &world.CompStarted{Compensation: "refund-card", Attempt: 2}),
			ev("s1", &world.CompSucceeded{}),
		}, false, []string{
			"✗ run failed (USER_ERROR): no truck",
			"↩ undoing charge-card (refund-card)",
			"↻ undo of charge-card attempt 1 failed: bank down (retrying in 0s)",
			"↩ charge-card undone",
		}},
		{"still running", []world.Event{failed, ev("s1", &world.CompStarted{Compensation: "refund-card", Attempt: 1})}, true, nil},
		{"failed for good", []world.Event{failed,
			ev("s1", &world.CompStarted{Compensation: "refund-card", Attempt: 1}),
			ev("s1", &world.CompFailed{Error: bad}),
		}, false, []string{"✗ could not undo charge-card: bank down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			wa := newWatcher(nil, "wrun_x", &printer{out: &out, start: time.Now()})
			for _, e := range append(slices.Clone(base), tc.log...) {
				wa.event(e, true)
			}
			if following := !wa.terminal || wa.comps.pending(); following != tc.pending {
				t.Errorf("still following: %v, want %v", following, tc.pending)
			}
			stamp := regexp.MustCompile(`(?m)^\s+\d+\.\d+s  `)
			got := stamp.ReplaceAllString(out.String(), "")
			for _, w := range tc.want {
				if !strings.Contains(got, w+"\n") {
					t.Errorf("progress lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
