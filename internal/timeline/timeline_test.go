package timeline_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/timeline"
	"github.com/skeinflow/skein/world"
)

// TestBuild: a retried step, a sleep, a webhook (its token redacted), a
// payload mark; Span closes what is still open at the run's end.
func TestBuild(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	events := []world.Event{
		ev(0, "s1", &world.StepCreated{StepName: "charge", Input: json.RawMessage(`1`)}),
		ev(10, "s1", &world.StepStarted{Attempt: 1}),
		ev(20, "s1", &world.StepRetrying{Error: &world.ErrorData{Message: "card <declined>"}}),
		ev(30, "s1", &world.StepStarted{Attempt: 2}),
		ev(40, "s1", &world.StepCompleted{Result: json.RawMessage(`2`)}),
		ev(50, "w1", &world.WaitCreated{ResumeAt: at(1050)}),
		ev(60, "h1", &world.HookCreated{Token: "whsec_0123456789abcdef0123", IsWebhook: true}),
		ev(70, "h1", &world.HookReceived{Payload: json.RawMessage(`{}`)}),
	}
	rows := timeline.Build(events, timeline.Options{})
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	step, sleep, hook := rows[0], rows[1], rows[2]
	kinds := []timeline.Kind{}
	for _, s := range step.Segs {
		kinds = append(kinds, s.Kind)
	}
	want := []timeline.Kind{timeline.Pending, timeline.Failed, timeline.Pending, timeline.OK}
	if len(kinds) != len(want) {
		t.Fatalf("step segments %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("segment %d is %v, want %v", i, kinds[i], want[i])
		}
	}
	if step.Try() != "2" || step.Status != "completed" || step.Note != "card <declined>" {
		t.Errorf("step row: try %q status %q note %q", step.Try(), step.Status, step.Note)
	}
	if sleep.Name != "sleep 1s" || sleep.Open == nil {
		t.Errorf("sleep row: %q open %v", sleep.Name, sleep.Open)
	}
	if hook.Name == "webhook whsec_0123456789abcdef0123" || hook.Status != "received" || len(hook.Marks) != 1 || hook.Marks[0].Kind != timeline.Payload {
		t.Errorf("hook row: %q %q %v", hook.Name, hook.Status, hook.Marks)
	}
	run := &world.Run{Status: world.RunStatusRunning, CreatedAt: start}
	s, e := timeline.Span(rows, run, at(500))
	if !s.Equal(start) || !e.Equal(at(500)) || sleep.Open != nil || !sleep.Last.Equal(at(500)) {
		t.Errorf("span %v..%v; sleep open %v last %v", s, e, sleep.Open, sleep.Last)
	}
	if timeline.Pending.String() != "pending" || timeline.Clip("abcdef", 4) != "abc…" {
		t.Error("Kind.String or Clip")
	}
}

// TestBuildStepOutlivesItsRun: a step running when its run failed or was
// cancelled records its outcome after the end; its row ends then, with
// that outcome (it used to be closed at the end, and the late outcome
// dereferenced the closed segment).
func TestBuildStepOutlivesItsRun(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	for _, tc := range []struct {
		name      string
		end, late world.EventData
		status    string
		kind      timeline.Kind
	}{
		{"cancelled", &world.RunCancelled{}, &world.StepFailed{Error: &world.ErrorData{Message: "the run was cancelled"}}, "failed", timeline.Failed},
		{"failed", &world.RunFailed{Error: &world.ErrorData{Message: "boom"}}, &world.StepCompleted{Result: json.RawMessage(`1`)}, "completed", timeline.OK},
		{"failed, retry", &world.RunFailed{Error: &world.ErrorData{Message: "boom"}}, &world.StepRetrying{Error: &world.ErrorData{Message: "again"}}, "retrying", timeline.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows := timeline.Build([]world.Event{
				ev(0, "s1", &world.StepCreated{StepName: "charge"}),
				ev(10, "s1", &world.StepStarted{Attempt: 1}),
				ev(20, "", tc.end),
				ev(90, "s1", tc.late),
			}, timeline.Options{})
			r := rows[0]
			if r.Status != tc.status || len(r.Segs) == 0 || r.Segs[len(r.Segs)-1].Kind != tc.kind {
				t.Fatalf("row: status %q segments %+v, want %q ending %v", r.Status, r.Segs, tc.status, tc.kind)
			}
		})
	}
}

// TestBuildTimerLeftByACompletedRun: a completed run's timer that a Select
// did not need is shown abandoned at the run's end, as a failed run's is,
// never waiting forever; a step the completed run left running keeps its
// row open until it records its outcome.
func TestBuildTimerLeftByACompletedRun(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, corr string, d world.EventData) world.Event {
		return world.Event{RunID: "wrun_x", CorrelationID: corr, CreatedAt: at(ms), Data: d}
	}
	rows := timeline.Build([]world.Event{
		ev(0, "w1", &world.WaitCreated{ResumeAt: at(48 * 3600 * 1000)}),
		ev(5, "s1", &world.StepCreated{StepName: "notify"}),
		ev(6, "s1", &world.StepStarted{Attempt: 1}),
		ev(10, "", &world.RunCompleted{}),
	}, timeline.Options{})
	timer, step := rows[0], rows[1]
	if timer.Status != "abandoned" || timer.Open != nil {
		t.Errorf("timer row: status %q open %v, want abandoned and ended", timer.Status, timer.Open)
	}
	if step.Status != "running" || step.Open == nil {
		t.Errorf("step row: status %q open %v, want still running", step.Status, step.Open)
	}
}
