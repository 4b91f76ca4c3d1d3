package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// TestTimelineRows: fan-out branches show their input, a child run's start
// names the child workflow and its run, and what a cancelled or failed run
// left going ends with it, marked as it stood.
func TestTimelineRows(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	child, _ := json.Marshal(map[string]string{"workflow": "invoice", "parentRunId": "wrun_x"})
	for _, tc := range []struct {
		name   string
		end    world.EventData
		status world.RunStatus
		want   []string
	}{
		{"cancelled", &world.RunCancelled{Reason: "changed my mind"}, world.RunStatusCancelled, []string{
			`reserve {"sku":"A"}   1  completed`,
			`reserve {"sku":"B"}   1  cancelled (running)`,
			`child invoice         1  completed`, "run wrun_child",
			`ship                  -  cancelled (pending)`,
			`hook approve          -  cancelled`,
			`sleep 1s              -  cancelled`,
		}},
		{"failed", &world.RunFailed{Error: &world.ErrorData{Message: "boom"}}, world.RunStatusFailed, []string{
			`reserve {"sku":"B"}   1  abandoned (running)`,
			`ship                  -  abandoned (pending)`,
			`hook approve          -  abandoned`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			events := []world.Event{
				ev(0, "s1", &world.StepCreated{StepName: "reserve", Input: json.RawMessage(`{"sku":"A"}`)}),
				ev(0, "s2", &world.StepCreated{StepName: "reserve", Input: json.RawMessage(`{"sku":"B"}`)}),
				ev(0, "s1", &world.StepStarted{Attempt: 1}),
				ev(0, "s2", &world.StepStarted{Attempt: 1}),
				ev(0, "c1", &world.StepCreated{StepName: childStep, Input: child}),
				ev(0, "c1", &world.StepStarted{Attempt: 1}),
				ev(100, "c1", &world.StepCompleted{Result: json.RawMessage(`"wrun_child"`)}),
				ev(200, "s1", &world.StepCompleted{Result: json.RawMessage(`1`)}),
				ev(300, "s3", &world.StepCreated{StepName: "ship"}),
				ev(300, "h1", &world.HookCreated{Token: "approve"}),
				ev(300, "w1", &world.WaitCreated{ResumeAt: at(1300)}),
				ev(500, "", tc.end),
			}
			run := &world.Run{RunID: "wrun_x", Status: tc.status, CreatedAt: start, CompletedAt: at(500)}
			var out bytes.Buffer
			drawTimeline(&out, run, events, at(5000), timelineOptions{width: 10})
			flat := strings.Join(strings.Fields(out.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("timeline lacks %q:\n%s", w, out.String())
				}
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			rows := strings.Join(strings.Fields(strings.Join(lines[:len(lines)-1], "\n")), " ") // without the legend
			if strings.Contains(rows, " running ") || strings.Contains(rows, " waiting ") {
				t.Errorf("something still runs or waits after the run ended:\n%s", out.String())
			}
		})
	}
}
