package skeintest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// TestCheckLogVariants records real histories with v1 of the fixture (a
// run suspended at its hook, one asleep, one completed, a fan-out asleep)
// and replays each against versions of the code: v1 itself, a step added,
// removed or called with other input without a patch (the divergence names
// the event and both sides), the same changes under workflow.Patched
// (compatible), and a step added where no run has gone yet. No step runs.
func TestCheckLogVariants(t *testing.T) {
	t.Parallel()
	h := recordHistories(t)
	type want struct {
		history string
		logged  string // "" for compatible
		code    string
	}
	for _, tc := range []struct {
		name  string
		v     histVariant
		wants []want
	}{
		{"v1", histVariant{}, []want{{history: "atHook"}, {history: "asleep"}, {history: "completed"}, {history: "fanout"}}},
		{"step added without a patch", histVariant{fraud: "plain"}, []want{
			{"atHook", `step_created for step "reserve"`, `the workflow asks for step "fraud-check"`},
			{"asleep", `step_created for step "reserve"`, `the workflow asks for step "fraud-check"`},
			{"completed", `step_created for step "reserve"`, `the workflow asks for step "fraud-check"`},
			{history: "fanout"},
		}},
		{"step added under a patch", histVariant{fraud: "patched"},
			[]want{{history: "atHook"}, {history: "asleep"}, {history: "completed"}}},
		{"step removed without a patch", histVariant{dropReserve: "plain"}, []want{
			{"atHook", `step_created for step "reserve"`, `the workflow asks for hook with token "approve/1"`},
			{"completed", `step_created for step "reserve"`, `the workflow asks for hook with token "approve/3"`},
		}},
		{"step removed under a patch", histVariant{dropReserve: "patched"},
			[]want{{history: "atHook"}, {history: "asleep"}, {history: "completed"}}},
		{"step called with other input", histVariant{otherInput: true}, []want{
			{"atHook", `step_created for step "reserve"`, "called with other arguments"},
		}},
		{"step added past the runs in flight", histVariant{stepAfterHook: true}, []want{
			{history: "atHook"}, // waits for the hook: the new step is beyond its history
			{"asleep", "wait_created", `the workflow asks for step "audit"`},
		}},
		{"fan-out reordered", histVariant{reverseLines: true}, []want{
			{"fanout", `step_created for step "reserve-line"`, "called with other arguments"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := &histCalls{}
			reg := tc.v.registry(calls)
			for _, w := range tc.wants {
				events := map[string][]world.Event{"atHook": h.atHook, "asleep": h.asleep, "completed": h.completed, "fanout": h.fanout}[w.history]
				rep := mustCheckLog(t, reg, events)
				if w.logged == "" {
					if !rep.Compatible() {
						t.Errorf("%s: %s", w.history, rep)
					}
					continue
				}
				d := rep.Divergence
				if d == nil || rep.Compatible() {
					t.Errorf("%s: want a divergence, got %s", w.history, rep)
					continue
				}
				if !strings.Contains(d.Logged, w.logged) || !strings.Contains(d.Asked, w.code) || d.Code != "REPLAY_DIVERGENCE" {
					t.Errorf("%s: divergence logged %q, asked %q, code %q; want %q, %q, REPLAY_DIVERGENCE", w.history, d.Logged, d.Asked, d.Code, w.logged, w.code)
				}
				ev := events[d.Seq-1]
				if d.EventID != ev.EventID || d.EventType != string(ev.Type()) || d.CorrelationID != ev.CorrelationID {
					t.Errorf("%s: divergence names event %d %s %s %s; the log has %s %s %s", w.history, d.Seq,
						d.EventID, d.EventType, d.CorrelationID, ev.EventID, ev.Type(), ev.CorrelationID)
				}
				if !strings.Contains(rep.String(), "incompatible: replay divergence at event") {
					t.Errorf("%s: summary %q", w.history, rep)
				}
			}
			if n := calls.n.Load(); n != 0 {
				t.Errorf("checking the histories ran %d steps; want none", n)
			}
		})
	}
}

// TestCheckLogWhereTheLogEnds: the report says where the code stands at
// the end of a recorded log: the run's status, what the code asks for next
// that the log does not hold, and a code that returns before the log
// records the run's end.
func TestCheckLogWhereTheLogEnds(t *testing.T) {
	t.Parallel()
	h := recordHistories(t)
	reg := histVariant{}.registry(&histCalls{})
	for _, tc := range []struct {
		name     string
		events   []world.Event
		status   world.RunStatus
		next     []sdk.Operation
		returned string
	}{
		{"at the hook", h.atHook, world.RunStatusRunning, nil, ""},
		{"completed", h.completed, world.RunStatusCompleted, nil, `"ship:3"`},
		{"reserve done, hook not yet created", logPrefix(t, h.completed, world.EventStepCompleted), world.RunStatusRunning,
			[]sdk.Operation{{Kind: "hook", Name: "approve/3"}}, ""},
		// The log up to the run's end, which it leaves out (run_deactivated
		// follows it in a completed log).
		{"ship done, run end not yet recorded", func() []world.Event {
			p := logPrefix(t, h.completed, world.EventRunCompleted)
			return p[:len(p)-1]
		}(), world.RunStatusRunning, nil, `"ship:3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := mustCheckLog(t, reg, tc.events)
			if !rep.Compatible() || rep.Status != tc.status || rep.RunID != tc.events[0].RunID || rep.WorkflowName != "order" {
				t.Fatalf("report %s; want compatible, %s", rep, tc.status)
			}
			if len(rep.Next) != len(tc.next) {
				t.Fatalf("next %v; want %v", rep.Next, tc.next)
			}
			for i, o := range tc.next {
				if rep.Next[i].Kind != o.Kind || rep.Next[i].Name != o.Name || rep.Next[i].ID == "" {
					t.Errorf("next[%d] = %+v; want %+v", i, rep.Next[i], o)
				}
			}
			if got := string(rep.Output); rep.Returned != (tc.returned != "") || got != tc.returned {
				t.Errorf("returned %v with %s; want %q", rep.Returned, got, tc.returned)
			}
		})
	}
}

// TestCheckLogPanic: code that panics replaying a run's log is
// incompatible with it, with the panic in the report.
func TestCheckLogPanic(t *testing.T) {
	t.Parallel()
	h := recordHistories(t)
	rep := mustCheckLog(t, histVariant{panics: true}.registry(&histCalls{}), logPrefix(t, h.atHook, world.EventStepCompleted))
	if rep.Compatible() || !rep.Panicked || rep.Divergence != nil ||
		!strings.Contains(rep.String(), "incompatible: the workflow panics replaying the log: workflow panicked: out of paper") {
		t.Errorf("report %s", rep)
	}
}

// TestCheckHeldRun: a run of v1 waits at its hook; v2 (a step added without
// a patch) is deployed and the hook's payload makes the worker replay the
// run, which it holds. The held run's history, run_held included, replays
// with v1 (going on with its sleep) and with the change under a patch, and
// not with v2: the check tells which deploy would release it.
func TestCheckHeldRun(t *testing.T) {
	t.Parallel()
	r := newHistRecorder(t)
	id := r.start("order", histOrder{ID: "9", Wait: time.Hour})
	r.until(id, world.EventHookCreated, 1)
	r.deploy(histVariant{fraud: "plain"})
	r.approve("9")
	held := r.until(id, world.EventRunHeld, 1)
	for _, tc := range []struct {
		name       string
		v          histVariant
		compatible bool
	}{
		{"v1", histVariant{}, true},
		{"v2", histVariant{fraud: "plain"}, false},
		{"v2 with a patch", histVariant{fraud: "patched"}, true},
	} {
		rep := mustCheckLog(t, tc.v.registry(&histCalls{}), held)
		if rep.Status != world.RunStatusHeld || rep.Compatible() != tc.compatible {
			t.Errorf("%s: %s; want held, compatible %v", tc.name, rep, tc.compatible)
		}
		if tc.compatible && (len(rep.Next) != 1 || rep.Next[0].Kind != "wait") {
			t.Errorf("%s: next %v; want the sleep", tc.name, rep.Next)
		}
	}
}
