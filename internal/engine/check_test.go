package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
)

// checkLog builds a log: run_created of workflow name, then the events.
func checkLog(name string, rest ...world.Event) []world.Event {
	const runID = "wrun_01J9Z3K7QH5V2M8X4N6P0R1S2T"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	log := []world.Event{{RunID: runID, EventID: "evnt_1", Seq: 1, CreatedAt: at, Data: &world.RunCreated{WorkflowName: name, Input: json.RawMessage(`1`)}}}
	for i, ev := range rest {
		ev.RunID, ev.Seq, ev.CreatedAt = runID, int64(i+2), at
		log = append(log, ev)
	}
	return log
}

// TestCheckLogRefuses: what is not one whole run's log is an error matching
// world.ErrInvalid, naming the event; a workflow the registry does not hold
// is a *NotRegisteredError naming it.
func TestCheckLogRefuses(t *testing.T) {
	t.Parallel()
	reg := newRegistry()
	reg.wf("w", func(c *Context, _ json.RawMessage) (json.RawMessage, error) { return nil, nil })
	started := world.Event{EventID: "evnt_2", Data: &world.RunStarted{}}
	for _, tc := range []struct {
		name string
		log  []world.Event
		want string
	}{
		{"empty", nil, "an empty log"},
		{"gap", func() []world.Event { l := checkLog("w", started); l[1].Seq = 3; return l }(), "event 2 has sequence number 3"},
		{"other run", func() []world.Event { l := checkLog("w", started); l[1].RunID = "wrun_other"; return l }(), "of run wrun_other"},
		{"no run_created", checkLog("w", started)[1:], "event 1 has sequence number 2"},
		{"two run_created", checkLog("w", checkLog("w")[0]), "event 2 is run_created"},
		{"invalid event", checkLog("w", world.Event{Data: &world.StepCreated{StepName: "s"}}), "event 2 (step_created)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := CheckLog(reg, tc.log)
			if !errors.Is(err, world.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want world.ErrInvalid and %q", err, tc.want)
			}
		})
	}
	_, err := CheckLog(reg, checkLog("gone"))
	var nr *NotRegisteredError
	if !errors.As(err, &nr) || nr.Workflow != "gone" || !strings.Contains(err.Error(), `workflow "gone"`) {
		t.Errorf("unregistered: %v", err)
	}
}

// TestCheckLogPanics: a workflow that panics replaying the log is reported
// as panicked, with the panic's message; one that returns an error is not.
func TestCheckLogPanics(t *testing.T) {
	t.Parallel()
	reg := newRegistry()
	reg.wf("boom", func(c *Context, _ json.RawMessage) (json.RawMessage, error) { panic("kaboom") })
	reg.wf("fails", func(c *Context, _ json.RawMessage) (json.RawMessage, error) { return nil, errors.New("no stock") })
	c, err := CheckLog(reg, checkLog("boom"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Panicked() || !strings.Contains(c.Failure.Message, "kaboom") || c.Divergence != nil {
		t.Errorf("panic: %+v", c)
	}
	c, err = CheckLog(reg, checkLog("fails"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Panicked() || !c.Returned || c.Failure == nil || c.Failure.Message != "no stock" || c.Status != world.RunStatusPending {
		t.Errorf("error: %+v", c)
	}
}
