//go:build integration

package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/world"
)

// TestChaosChecksCatchViolations feeds the chaos checks made-up logs and
// step bodies, one violation each, so that a green chaos run means the
// checks looked, not that they cannot see.
func TestChaosChecksCatchViolations(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := demo.ChaosStep.Name()
	ev := func(seq int, corr string, ms int, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_1", Seq: int64(seq), CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	good := func() []world.Event {
		return []world.Event{
			ev(1, "", 0, &world.RunCreated{WorkflowName: "chaos"}),
			ev(2, "", 1, &world.RunStarted{}),
			ev(3, "s1", 2, &world.StepCreated{StepName: step}),
			ev(4, "s1", 3, &world.StepStarted{StepName: step, Attempt: 1}),
			ev(5, "s1", 100, &world.StepCompleted{Result: json.RawMessage(`"x"`)}),
			ev(6, "", 101, &world.RunCompleted{}),
			ev(7, "", 101, &world.RunDeactivated{}),
		}
	}
	body := func(attempt, pid, from, to int, ended bool) bodyRun {
		return bodyRun{attempt: attempt, pid: pid, start: at(from), end: at(to), ended: ended}
	}
	okBodies := []bodyRun{body(1, 10, 5, 90, true)}
	tests := []struct {
		name   string
		evs    func([]world.Event) []world.Event
		status world.RunStatus
		bodies []bodyRun
		want   string // a part of the one violation; "" for none
	}{
		{name: "clean", want: ""},
		{name: "two terminal events", evs: func(e []world.Event) []world.Event {
			return append(e, ev(8, "", 102, &world.RunCancelled{Reason: "late"}))
		}, want: "2 terminal events"}, // (and "cancelled: late", left out below)
		{name: "no terminal event", evs: func(e []world.Event) []world.Event { return e[:5] }, status: world.RunStatusRunning, want: "0 terminal events"},
		{name: "step completed twice", evs: func(e []world.Event) []world.Event {
			e = append(e[:5:5], ev(6, "s1", 100, &world.StepCompleted{}), ev(7, "", 101, &world.RunCompleted{}), ev(8, "", 101, &world.RunDeactivated{}))
			return e
		}, want: "completed 2 times"},
		{name: "step never completed", evs: func(e []world.Event) []world.Event {
			return append(e[:4:4], ev(5, "", 101, &world.RunCompleted{}), ev(6, "", 101, &world.RunDeactivated{}))
		}, want: "completed 0 times"},
		{name: "two run_deactivated", evs: func(e []world.Event) []world.Event {
			return append(e, ev(8, "", 103, &world.RunDeactivated{}))
		}, want: "2 run_deactivated"},
		{name: "deactivated before the end", evs: func(e []world.Event) []world.Event {
			return append(e[:5:5], ev(6, "", 100, &world.RunDeactivated{}), ev(7, "", 101, &world.RunCompleted{}))
		}, want: "before the run's end"},
		{name: "never deactivated", evs: func(e []world.Event) []world.Event { return e[:6] }, want: "0 run_deactivated"},
		{name: "gap in seqs", evs: func(e []world.Event) []world.Event { e[3].Seq = 9; return e }, want: "has seq 9"},
		{name: "failed run", evs: func(e []world.Event) []world.Event {
			e[5] = ev(6, "", 101, &world.RunFailed{ErrorCode: "USER_ERROR", Error: &world.ErrorData{Message: "boom"}})
			return e
		}, status: world.RunStatusFailed, want: "failed USER_ERROR: boom"},
		{name: "bodies at once", bodies: []bodyRun{body(1, 10, 5, 60, false), body(2, 11, 50, 90, true)}, want: "started while attempt 1"},
		{name: "bodies one after the other", bodies: []bodyRun{body(1, 10, 5, 40, false), body(2, 11, 50, 90, true)}, want: ""},
		{name: "body after completion", bodies: []bodyRun{body(1, 10, 5, 90, true), body(2, 11, 150, 160, true)}, want: "after the step completed"},
		{name: "no body ended", bodies: []bodyRun{body(1, 10, 5, 90, false)}, want: "no body of it ran to its end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := good()
			if tt.evs != nil {
				evs = tt.evs(evs)
			}
			status := world.RunStatusCompleted
			if tt.status != "" {
				status = tt.status
			}
			bodies := okBodies
			if tt.bodies != nil {
				bodies = tt.bodies
			}
			got := checkRunLog(world.Run{RunID: "wrun_1", Status: status}, evs, 1,
				map[[2]string][]bodyRun{{"wrun_1", "s1"}: bodies}, map[[2]string]bool{}, &chaosTally{})
			var extra []string // a failed, cancelled or running run also breaks "completed"
			for _, v := range got {
				if !strings.HasPrefix(v, "status ") && !strings.HasPrefix(v, "cancelled: ") {
					extra = append(extra, v)
				}
			}
			switch {
			case tt.want == "" && len(extra) > 0:
				t.Errorf("violations %q, want none", extra)
			case tt.want != "" && (len(extra) != 1 || !strings.Contains(extra[0], tt.want)):
				t.Errorf("violations %q, want one with %q", extra, tt.want)
			}
		})
	}
}
