package timeline_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// TestBuildCompensation: a compensation has a row of its own below the
// others, named after the step it undoes and its compensation step, with
// its attempts (failed, lost, ok) and retries; the step's row takes the
// step's compensation status; a run's end leaves a compensation going; an
// unfinished compensation after the end stretches the chart to now.
func TestBuildCompensation(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	boom := &world.ErrorData{Message: "bank <down>"}
	charged := []world.Event{
		ev(0, "s1", &world.StepCreated{StepName: "charge", Input: json.RawMessage(`1`), Compensation: "refund"}),
		ev(10, "s1", &world.StepStarted{Attempt: 1}),
		ev(20, "s1", &world.StepCompleted{Result: json.RawMessage(`2`)}),
		ev(30, "s2", &world.StepCreated{StepName: "ship"}),
		ev(40, "s2", &world.StepStarted{Attempt: 1}),
		ev(50, "s2", &world.StepFailed{Error: &world.ErrorData{Message: "no truck"}}),
	}
	failed := ev(60, "", &world.RunFailed{Error: &world.ErrorData{Message: "no truck"}, Compensate: true})
	K := func(k ...timeline.Kind) []timeline.Kind { return k }
	ok, bad, run, lost, pend := timeline.OK, timeline.Failed, timeline.Running, timeline.Lost, timeline.Pending
	for _, tc := range []struct {
		name        string
		log         []world.Event
		deactivated bool
		stepStatus  string
		try, status string
		note        string
		kinds       []timeline.Kind
		spanEnd     int // ms
	}{
		{"retried then compensated", append(slices.Clone(charged), failed,
			ev(100, "s1", &world.CompStarted{Compensation: "refund", Attempt: 1}),
			ev(110, "s1", &world.CompRetryScheduled{Error: boom, RetryAfter: at(200)}),
			ev(200, "s1", &world.CompStarted{Compensation: "refund", Attempt: 2}),
			ev(220, "s1", &world.CompSucceeded{})),
			true, "compensated", "2", "completed", "bank <down>", K(bad, pend, ok), 220},
		{"failed for good", append(slices.Clone(charged), failed,
			ev(100, "s1", &world.CompStarted{Compensation: "refund", Attempt: 1}),
			ev(130, "s1", &world.CompFailed{Error: boom})),
			true, "compensation_failed", "1", "failed", "bank <down>", K(bad), 130},
		{"executor lost", append(slices.Clone(charged), failed,
			ev(100, "s1", &world.CompStarted{Compensation: "refund", Attempt: 1}),
			ev(400, "s1", &world.CompStarted{Compensation: "refund", Attempt: 2, Interrupted: 1}),
			ev(450, "s1", &world.CompSucceeded{})),
			true, "compensated", "1 (+1 lost)", "completed", "", K(lost, ok), 450},
		{"still compensating after the end", append(slices.Clone(charged), failed,
			ev(100, "s1", &world.CompStarted{Compensation: "refund", Attempt: 1})),
			false, "compensating", "1", "running", "", K(run), 1000},
		{"started while the run was active", append(slices.Clone(charged),
			ev(55, "s1", &world.CompStarted{Compensation: "refund", Attempt: 1}), failed,
			ev(90, "s1", &world.CompSucceeded{})),
			true, "compensated", "1", "completed", "", K(ok), 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows := timeline.Build(tc.log, timeline.Options{})
			if len(rows) != 3 {
				t.Fatalf("got %d rows, want charge, ship and the compensation", len(rows))
			}
			step, ship, comp := rows[0], rows[1], rows[2]
			r := &world.Run{Status: world.RunStatusFailed, CreatedAt: start, CompletedAt: at(60)}
			if tc.deactivated {
				r.DeactivatedAt = at(500)
			}
			_, end := timeline.Span(rows, r, at(1000))
			if step.Status != tc.stepStatus || ship.Status != "failed" || step.Compensates != "" {
				t.Errorf("step rows: %q %q (compensates %q)", step.Status, ship.Status, step.Compensates)
			}
			if comp.Name != "undo charge: refund" || comp.Compensates != "charge" {
				t.Errorf("compensation row %q compensates %q", comp.Name, comp.Compensates)
			}
			if comp.Try() != tc.try || comp.Status != tc.status || comp.Note != tc.note {
				t.Errorf("compensation row: try %q status %q note %q, want %q %q %q", comp.Try(), comp.Status, comp.Note, tc.try, tc.status, tc.note)
			}
			var kinds []timeline.Kind
			for _, s := range comp.Segs {
				kinds = append(kinds, s.Kind)
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("compensation segments %v, want %v", kinds, tc.kinds)
			}
			if !end.Equal(at(tc.spanEnd)) || !comp.Last.Equal(at(tc.spanEnd)) {
				t.Errorf("span ends %v, compensation row %v; want +%dms", end.Sub(start), comp.Last.Sub(start), tc.spanEnd)
			}
		})
	}
}

// TestCompCountsWording: a saga still going owes nothing yet (a completed
// step's compensation runs only should the run fail); a finished run that
// asked for compensation owes what has not run; one that did not, nothing.
func TestCompCountsWording(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		run  world.Run
		want string
	}{
		{world.Run{Status: world.RunStatusRunning, Compensations: world.Compensations{Owed: 4}}, "4 to run should the run fail"},
		{world.Run{Status: world.RunStatusCompleted, Compensations: world.Compensations{Owed: 4}}, ""},
		{world.Run{Status: world.RunStatusFailed, Compensate: true, Compensations: world.Compensations{Owed: 1, Succeeded: 3}}, "1 owed, 3 succeeded"},
	} {
		if got := timeline.CompCounts(&c.run); got != c.want {
			t.Errorf("%s run: %q, want %q", c.run.Status, got, c.want)
		}
	}
}
