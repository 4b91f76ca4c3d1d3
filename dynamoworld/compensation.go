package dynamoworld

import (
	"encoding/json"

	"github.com/skeinflow/skein/world"
)

// Compensation (world.StepCompensation, world.Run.Compensations). A step's
// compensation lives on its item, beside the step's own state, and changes
// with the comp_* events correlated to the step: the planner judges them
// on the step like the step_* events (world.IsStepEvent) and writes the
// item's diff. The compensation step's name is set by step_created and
// never changes; its progress and last error change with each comp_*
// event. The last error is a payload (cerr): claim-checked when large, like
// the step's own error.
//
// The run's compensation flag and counts change with events (step_completed
// of a step that declared a compensation, comp_started, comp_succeeded,
// comp_failed; run_failed and run_cancelled for the flag) and never with
// the head alone, so, like the run's rest (rest.go), they are kept on every
// commit item and read from the newest one: run_deactivated's refusal
// while a compensation runs or is owed is judged on what the fence
// checked. Each is absent while zero.
const (
	// On a step item.
	aCompStep        = "cn"  // the compensation step's name
	aCompAttempt     = "cat" // comp_started events
	aCompInterrupted = "cai" // attempts taken over after their lease expired
	aCompRetryAfter  = "cra"
	aCompLeaseExp    = "clx"
	aCompStarted     = "csa"
	aCompEnded       = "cea"
	// On a commit item.
	aRunCompensate = "rcp" // 1: the run's end asked for compensation
	aCompOwed      = "rco"
	aCompRunning   = "rcr"
	aCompSucceeded = "rcs"
	aCompFailed    = "rcf"
)

// encodeStepComp stores a step's compensation on its item; nothing when it
// declared none.
func encodeStepComp(e *encItem, c *world.StepCompensation) error {
	if c == nil {
		return nil
	}
	it := e.it
	setS(it, aCompStep, c.Step)
	setPositive(it, aCompAttempt, c.Attempt)
	setPositive(it, aCompInterrupted, c.Interrupted)
	setT(it, aCompRetryAfter, c.RetryAfter)
	setT(it, aCompLeaseExp, c.LeaseExpiresAt)
	setT(it, aCompStarted, c.StartedAt)
	setT(it, aCompEnded, c.EndedAt)
	if c.Error != nil {
		b, err := json.Marshal(c.Error)
		if err != nil {
			return err
		}
		e.payload(attrCompErr, b)
	}
	return nil
}

// decodeStepComp reads what encodeStepComp stored: nil for a step that
// declared no compensation.
func decodeStepComp(it item, fetched map[string][]byte) (*world.StepCompensation, error) {
	name := getS(it, aCompStep)
	if name == "" {
		return nil, nil
	}
	c := &world.StepCompensation{
		Step:           name,
		Attempt:        int(getN(it, aCompAttempt)),
		Interrupted:    int(getN(it, aCompInterrupted)),
		RetryAfter:     getT(it, aCompRetryAfter),
		LeaseExpiresAt: getT(it, aCompLeaseExp),
		StartedAt:      getT(it, aCompStarted),
		EndedAt:        getT(it, aCompEnded),
	}
	b, err := payloadOf(it, attrCompErr, fetched)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		c.Error = &world.ErrorData{}
		if err := json.Unmarshal(b, c.Error); err != nil {
			return nil, corrupt(it, "compensation error", err)
		}
	}
	return c, nil
}

// encodeRunComp stores r's compensation flag and counts on a commit item.
func encodeRunComp(it item, r *world.Run) {
	if r.Compensate {
		setN(it, aRunCompensate, 1)
	}
	c := r.Compensations
	setPositive(it, aCompOwed, c.Owed)
	setPositive(it, aCompRunning, c.Running)
	setPositive(it, aCompSucceeded, c.Succeeded)
	setPositive(it, aCompFailed, c.Failed)
}

// decodeRunComp reads what encodeRunComp stored on the newest commit.
func decodeRunComp(last item, r *world.Run) {
	r.Compensate = getN(last, aRunCompensate) == 1
	r.Compensations = world.Compensations{
		Owed:      int(getN(last, aCompOwed)),
		Running:   int(getN(last, aCompRunning)),
		Succeeded: int(getN(last, aCompSucceeded)),
		Failed:    int(getN(last, aCompFailed)),
	}
}

// setPositive sets a number attribute when n > 0 (absent reads as 0).
func setPositive(it item, name string, n int) {
	if n > 0 {
		setN(it, name, int64(n))
	}
}

// cloneStep copies a step with its compensation, so that a copy handed to
// a caller shares nothing the cache keeps.
func cloneStep(s *world.Step) *world.Step {
	c := *s
	if s.Compensation != nil {
		comp := *s.Compensation
		c.Compensation = &comp
	}
	return &c
}
