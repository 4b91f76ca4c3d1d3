package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/world"
)

// ReplayReport is what replaying one run's recorded log against the code
// of a Registry found (CheckLog): whether a worker running this
// code would go on with the run, or hold it because the code and the log
// part ways.
type ReplayReport struct {
	RunID        string
	WorkflowName string
	// Events is the number of events replayed.
	Events int
	// Status is the run's status where the log ends: a run still going
	// (pending, running, held) or one that ended.
	Status world.RunStatus
	// Divergence is the first place where the code and the log part ways,
	// as a held run would report it; nil if the code replays the whole log.
	// Its fields: Seq, EventID, EventType and CorrelationID identify the
	// creation event where they part; Logged is what the log records there
	// (such as `step_created for step "reserve" (wstep_…) with input
	// digest …`), Asked what the code does instead (such as `the workflow
	// asks for step "fraud-check" (wstep_…)`), Code the error code a worker
	// holds the run with (REPLAY_DIVERGENCE), Message the whole divergence,
	// as `runs show` shows a held run's (and its Error()).
	Divergence *engine.Divergence
	// Returned reports that the code returned where the log ends: with
	// Output, or with the error Err (a panic included). On a log that does
	// not record the run's end, that is how the run ends next.
	Returned bool
	Output   json.RawMessage
	Err      error
	// Panicked reports that the code panicked replaying the log (or called
	// the workflow API from a goroutine it started), Err saying how.
	Panicked bool
	// Next lists the steps, hooks and sleeps the code asks for that the
	// log does not hold: what the run creates when a worker next runs it.
	Next []Operation
}

// Operation is a step, hook, sleep or attributes the code asks for (the
// engine's, which CheckLog reports).
type Operation = engine.Operation

// Compatible reports whether this code can go on with the run: it replays
// the log without diverging and without panicking (unless the log records
// that the run failed). A run that ended is never replayed again, so a
// compatible report on one says that the code would have carried it to the
// point where it ended, and runs in flight at any point of it with it.
func (r *ReplayReport) Compatible() bool { return r.Problem() == nil }

// Problem returns why the code is not compatible with the run's log (the
// Divergence, or the panic), or nil.
func (r *ReplayReport) Problem() error {
	switch {
	case r.Divergence != nil:
		return r.Divergence
	case r.Panicked && r.Status != world.RunStatusFailed:
		return fmt.Errorf("the workflow panics replaying the log: %w", r.Err)
	}
	return nil
}

// String is a one-line summary: the run, and compatible with where the
// code stands where the log ends, or incompatible with the problem.
func (r *ReplayReport) String() string {
	head := fmt.Sprintf("run %s (workflow %q, %d events, %s)", r.RunID, r.WorkflowName, r.Events, r.Status)
	if err := r.Problem(); err != nil {
		return head + ": incompatible: " + err.Error()
	}
	return head + ": compatible: " + r.outcome()
}

func (r *ReplayReport) outcome() string {
	switch {
	case r.Status.Terminal():
		return "the log records the run's end"
	case r.Returned && r.Err != nil:
		return "the code fails the run where the log ends: " + r.Err.Error()
	case r.Returned:
		return "the code completes the run where the log ends"
	case len(r.Next) > 0:
		names := make([]string, 0, len(r.Next))
		for _, o := range r.Next {
			names = append(names, o.String())
		}
		return "where the log ends, the code goes on with " + strings.Join(names, ", ")
	}
	return "the code waits where the log ends (for a step, sleep or hook the log has in progress)"
}

// CheckLog replays one run's recorded log (every event, in order from its
// run_created: what Storage.ListEvents returns and `skein runs events`
// prints) against the registry's workflow of the name the log records,
// without executing anything: no step runs (their results come from the
// log), no timer fires, nothing is written anywhere. It is the replay a
// worker does when it picks the run up, so a divergence it reports is the
// one that would hold the run. Where the code asks for something the log
// does not hold, the recorded history ends: compatible so far.
//
// A log that is not one whole run's is an error matching world.ErrInvalid;
// a run of a workflow the registry does not hold, a *RequestError of
// Kind ErrUnknownWorkflow naming it.
func CheckLog(r *Registry, events []world.Event) (*ReplayReport, error) {
	c, err := engine.CheckLog(engineRegistry{r}, events)
	var nr *engine.NotRegisteredError
	if errors.As(err, &nr) {
		names := Workflows(r)
		slices.Sort(names)
		return nil, &RequestError{Kind: ErrUnknownWorkflow, Workflow: nr.Workflow, RunID: nr.RunID, Registered: names}
	}
	if err != nil {
		return nil, fmt.Errorf("workflow: check log: %w", err)
	}
	rep := &ReplayReport{
		RunID: c.RunID, WorkflowName: c.WorkflowName, Events: c.Events, Status: c.Status,
		Returned: c.Returned, Output: c.Output, Panicked: c.Panicked(),
	}
	rep.Divergence = c.Divergence
	if c.Failure != nil {
		rep.Err = r.decode(c.Failure)
	}
	rep.Next = c.Next
	return rep, nil
}
