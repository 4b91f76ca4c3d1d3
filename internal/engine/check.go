package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/skeinflow/skein/world"
)

// Checking a recorded log against the code, with no World.
//
// CheckLog answers, before a deploy, what a worker running the registry's
// code would find when it next replays a run: the run goes on, or it is
// held because the code and the log part ways. It replays the log through
// the replayer a session rebuilds its workflow with (replayer.replay), so
// that the answer cannot drift from what production does: the same
// matching of creation events, the same input digests, the same patch
// decisions. Nothing else of a session runs: no step executes (their
// results are the log's), no timer fires (a sleep the log has not completed
// is still asleep), nothing is appended or enqueued. Where the code asks for
// something the log does not hold, the recorded history ends and the check
// stops there: compatible so far.

// Divergence is where a run's code and its log part ways: the creation
// event at Seq records one operation, the code asks for another (or for
// nothing more).
type Divergence struct {
	// Seq, EventID, EventType and CorrelationID identify the event.
	Seq           int64
	EventID       string
	EventType     string
	CorrelationID string
	// Logged is what the log records there, such as `step_created for step
	// "charge" (wstep_…) with input digest …`.
	Logged string
	// Asked is what the code does instead, such as `the workflow asks for
	// step "fraud-check" (wstep_…)`.
	Asked string
	// Code is the error code a worker holds the run with:
	// REPLAY_DIVERGENCE.
	Code string
	// Message is the whole divergence, as a held run records it.
	Message string
}

// Error returns the Message: a divergence is why the code cannot go on
// with the run (sdk.ReplayReport.Problem).
func (d *Divergence) Error() string { return d.Message }

// Operation is a step, hook, sleep or attributes the code asked for.
type Operation struct {
	Kind string // "step", "hook", "wait" or "attributes"
	Name string // the step's name, the hook's token, the attribute keys (sorted, comma-separated); empty for a wait
	ID   string // its correlation ID
}

// String names the operation: its kind, and its name when it has one.
func (o Operation) String() string {
	if o.Name == "" {
		return o.Kind
	}
	return fmt.Sprintf("%s %q", o.Kind, o.Name)
}

// LogCheck is what CheckLog found by replaying one run's log.
type LogCheck struct {
	RunID        string
	WorkflowName string
	// Events is the number of events replayed.
	Events int
	// Status is the run's status where the log ends.
	Status world.RunStatus
	// Divergence is the first place where code and log part ways; nil if
	// the code replays the whole log.
	Divergence *Divergence
	// Returned reports that the code returned, where the log ends: with
	// Output, or with Failure and FailCode (USER_ERROR for a panic or an
	// error, WORKFLOW_API_MISUSE, ...). On a log that does not record the
	// run's end, that is how the run ends next.
	Returned bool
	Output   json.RawMessage
	Failure  *world.ErrorData
	FailCode string
	// Next lists the operations the code asks for that the log does not
	// hold, in order: what the run creates when a worker next runs it.
	Next []Operation
}

// Panicked reports whether the code panicked (or misused the workflow API)
// replaying the log.
func (c *LogCheck) Panicked() bool {
	return c.Returned && c.Failure != nil &&
		(c.Failure.Type == TypePanic || c.FailCode == world.CodeWorkflowAPIMisuse)
}

// NotRegisteredError reports a log of a workflow the registry does not
// hold.
type NotRegisteredError struct {
	RunID    string
	Workflow string
}

// NewNotRegisteredError returns the error for a run of an unregistered
// workflow.
func NewNotRegisteredError(runID, workflow string) *NotRegisteredError {
	return &NotRegisteredError{RunID: runID, Workflow: workflow}
}

func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("run %s is of workflow %q, which is not registered", e.RunID, e.Workflow)
}

// CheckLog replays a run's recorded log (all of it, in order from its
// run_created) against the workflow reg holds under the name the log
// records, and reports what the replay found (see the comment at the top of
// this file). A log that is not one whole run's (empty, not starting with
// run_created, sequence numbers not 1, 2, 3, ..., events of another run, an
// invalid event) is an error matching world.ErrInvalid; a workflow reg does
// not hold, a *NotRegisteredError.
func CheckLog(reg Registry, events []world.Event) (*LogCheck, error) {
	if err := checkWholeLog(events); err != nil {
		return nil, err
	}
	var st runState
	for i := range events {
		st.track(&events[i])
	}
	wf, ok := reg.Workflow(st.meta.workflowName)
	if !ok {
		return nil, NewNotRegisteredError(st.meta.runID, st.meta.workflowName)
	}
	r := newReplayer(wf, slog.New(slog.DiscardHandler))
	defer r.stop()
	r.replay(func(fn func(*world.Event)) {
		for i := range events {
			fn(&events[i])
		}
	})
	c := &LogCheck{RunID: st.meta.runID, WorkflowName: st.meta.workflowName, Events: len(events), Status: st.runStatus}
	r.failMisused()
	if r.diverged() {
		c.Divergence = noteNoSecret(r.divergence, events)
		return c, nil
	}
	if r.finished {
		c.Returned, c.Output, c.Failure, c.FailCode = true, r.output, r.failure, r.failCode
	}
	for _, o := range r.ops[r.matched:] {
		c.Next = append(c.Next, Operation{Kind: o.kind.String(), Name: o.name, ID: o.id})
	}
	return c, nil
}

// noteNoSecret adds to a divergence at a hook_created, in a log whose
// run_created has no secret (what an export without tokens leaves), that
// the tokens derived from the secret (generated hooks, child runs) cannot
// be checked: the replay derives other ones.
func noteNoSecret(d *Divergence, events []world.Event) *Divergence {
	rc, ok := events[0].Data.(*world.RunCreated)
	if !ok || len(rc.Secret) > 0 || d.EventType != string(world.EventHookCreated) {
		return d
	}
	out := *d
	out.Message += " (this log has no run secret, as an export without tokens leaves it: the tokens of generated hooks " +
		"and child runs derive from that secret and cannot be checked; export the run with its tokens: " +
		"skein runs export, or skein runs events -show-tokens)"
	return &out
}

// checkWholeLog refuses what is not one whole run's log.
func checkWholeLog(events []world.Event) error {
	if len(events) == 0 {
		return fmt.Errorf("%w: an empty log", world.ErrInvalid)
	}
	runID := events[0].RunID
	for i := range events {
		ev := &events[i]
		switch {
		case ev.RunID != runID:
			return fmt.Errorf("%w: event %d is of run %s, the log's first of run %s", world.ErrInvalid, i+1, ev.RunID, runID)
		case ev.Seq != int64(i+1):
			return fmt.Errorf("%w: run %s: event %d has sequence number %d (a whole log numbers its events 1, 2, 3, ...)",
				world.ErrInvalid, runID, i+1, ev.Seq)
		}
		if err := world.ValidateEvent(*ev); err != nil {
			return fmt.Errorf("run %s: event %d (%s): %w", runID, ev.Seq, ev.Type(), err)
		}
		if _, ok := ev.Data.(*world.RunCreated); ok != (i == 0) {
			return fmt.Errorf("%w: run %s: event %d is %s (a log begins with its one run_created)", world.ErrInvalid, runID, ev.Seq, ev.Type())
		}
	}
	return nil
}
