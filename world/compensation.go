package world

import "time"

// Compensation (sagas). A step may declare another step as its undo
// (StepCreated.Compensation names it). Once the step has completed, its
// compensation can run: comp_started claims an attempt under a lease,
// exactly as step_started does for the step itself; comp_retry_scheduled
// records a failed attempt that will be tried again after RetryAfter;
// comp_succeeded and comp_failed end it for good. Every comp_* event is
// correlated to the step being compensated (not to a step of its own), so
// the step moves
//
//	completed -> compensating -> compensated | compensation_failed
//
// and a compensation is recorded at most once per step. A compensation may
// run while its run is active (the workflow compensates and goes on) or
// after the run's end (a failed or cancelled run whose terminal event asked
// for it: RunFailed.Compensate, RunCancelled.Compensate); never after the run
// is deactivated. The run counts its compensations (Run.Compensations), and
// run_deactivated is refused while one runs, or while a completed step of a
// run that asked to be compensated still owes one.

// Event types of compensation.
const (
	EventCompStarted        EventType = "comp_started"
	EventCompRetryScheduled EventType = "comp_retry_scheduled"
	EventCompSucceeded      EventType = "comp_succeeded"
	EventCompFailed         EventType = "comp_failed"
)

// Step states of compensation. All three are terminal for the step itself
// (StepStatus.Terminal): the step's own outcome was step_completed.
const (
	StepStatusCompensating       StepStatus = "compensating"
	StepStatusCompensated        StepStatus = "compensated"
	StepStatusCompensationFailed StepStatus = "compensation_failed"
)

type (
	// CompStarted starts an attempt of a completed step's compensation (or
	// takes over one whose lease expired, or retries one whose RetryAfter
	// has passed). LeaseTTL is how long the attempt is exclusive
	// (DefaultStepLease when zero); the World fills in Compensation (the
	// compensation step's name), Attempt, Interrupted and LeaseExpiresAt.
	CompStarted struct {
		StepName       string        `json:"stepName,omitempty"`
		Compensation   string        `json:"compensation,omitempty"`
		Attempt        int           `json:"attempt,omitempty"`
		Interrupted    int           `json:"interrupted,omitempty"`
		LeaseTTL       time.Duration `json:"leaseTtl,omitempty"`
		LeaseExpiresAt time.Time     `json:"leaseExpiresAt,omitzero"`
	}
	// CompRetryScheduled records a failed compensation attempt that is tried
	// again no sooner than RetryAfter.
	CompRetryScheduled struct {
		StepName   string     `json:"stepName,omitempty"`
		Error      *ErrorData `json:"error"`
		RetryAfter time.Time  `json:"retryAfter,omitzero"`
	}
	// CompSucceeded ends a compensation: the step is compensated.
	CompSucceeded struct {
		StepName string `json:"stepName,omitempty"`
	}
	// CompFailed ends a compensation that failed for good: the step is
	// compensation_failed.
	CompFailed struct {
		StepName string     `json:"stepName,omitempty"`
		Error    *ErrorData `json:"error"`
	}
)

// StepCompensation is the compensation a step declared and how it went.
type StepCompensation struct {
	// Step names the compensation step (StepCreated.Compensation).
	Step string `json:"step"`
	// Attempt counts comp_started events; Interrupted those whose attempt
	// recorded no outcome (taken over after its lease expired).
	Attempt        int        `json:"attempt,omitempty"`
	Interrupted    int        `json:"interrupted,omitempty"`
	Error          *ErrorData `json:"error,omitempty"`
	RetryAfter     time.Time  `json:"retryAfter,omitzero"`
	LeaseExpiresAt time.Time  `json:"leaseExpiresAt,omitzero"`
	StartedAt      time.Time  `json:"startedAt,omitzero"`
	EndedAt        time.Time  `json:"endedAt,omitzero"`
}

// Compensations counts a run's compensations. Owed: completed steps that
// declared a compensation which has not started; Running: steps
// compensating (an attempt running or a retry scheduled); Succeeded and
// Failed: compensations ended.
type Compensations struct {
	Owed      int `json:"owed,omitempty"`
	Running   int `json:"running,omitempty"`
	Succeeded int `json:"succeeded,omitempty"`
	Failed    int `json:"failed,omitempty"`
}

// EventType implementations.
func (*CompStarted) eventType() EventType        { return EventCompStarted }
func (*CompRetryScheduled) eventType() EventType { return EventCompRetryScheduled }
func (*CompSucceeded) eventType() EventType      { return EventCompSucceeded }
func (*CompFailed) eventType() EventType         { return EventCompFailed }

func (d *CompStarted) validate(corr string) error {
	if err := correlation(EventCompStarted, PrefixStep, corr); err != nil {
		return err
	}
	if d.LeaseTTL < 0 {
		return invalidf(EventCompStarted, corr, "negative lease TTL %s", d.LeaseTTL)
	}
	return nil
}

func (d *CompRetryScheduled) validate(corr string) error {
	if err := correlation(EventCompRetryScheduled, PrefixStep, corr); err != nil {
		return err
	}
	if d.Error == nil {
		return invalidf(EventCompRetryScheduled, corr, "error required")
	}
	return nil
}

func (d *CompSucceeded) validate(corr string) error {
	return correlation(EventCompSucceeded, PrefixStep, corr)
}

func (d *CompFailed) validate(corr string) error {
	if err := correlation(EventCompFailed, PrefixStep, corr); err != nil {
		return err
	}
	if d.Error == nil {
		return invalidf(EventCompFailed, corr, "error required")
	}
	return nil
}

// IsStepEvent reports whether an event of type t is correlated to a step
// (the step_* events and the comp_* events): the World loads that step to
// judge it.
func IsStepEvent(t EventType) bool {
	switch t {
	case EventStepCreated, EventStepStarted, EventStepCompleted, EventStepFailed, EventStepRetrying,
		EventCompStarted, EventCompRetryScheduled, EventCompSucceeded, EventCompFailed:
		return true
	}
	return false
}

// compensable reports whether a step completing now owes a compensation.
func compensable(st *Step) bool { return st.Compensation != nil }

// compStep applies the refusals common to the comp_* events: a missing
// step (404), a deactivated run (410). It returns a copy of the step.
func compStep(s State, t EventType, corr string) (*Step, error) {
	if s.Step == nil {
		return nil, refuse(ErrNotFound, t, corr, "step does not exist")
	}
	if s.Run.Deactivated() {
		return nil, refuse(ErrGone, t, corr, "run %s is deactivated", s.Run.RunID)
	}
	st := *s.Step
	if st.Compensation == nil {
		return nil, refuse(ErrConflict, t, corr, "step %s declares no compensation", st.StepName)
	}
	c := *st.Compensation
	st.Compensation = &c
	return &st, nil
}

// applyCompStarted starts (or retries, or takes over) the compensation of a
// completed step.
func applyCompStarted(s State, eff *Effect, d *CompStarted, now time.Time) error {
	corr := eff.Event.CorrelationID
	st, err := compStep(s, EventCompStarted, corr)
	if err != nil {
		return err
	}
	c := st.Compensation
	switch st.Status {
	case StepStatusCompleted:
		eff.Run.Compensations.Owed = max(0, eff.Run.Compensations.Owed-1)
		eff.Run.Compensations.Running++
		c.StartedAt = now
	case StepStatusCompensating:
		if c.RetryAfter.After(now) {
			return tooEarly(EventCompStarted, corr, c.RetryAfter)
		}
		if !c.LeaseExpiresAt.IsZero() {
			if c.LeaseExpiresAt.After(now) {
				return stepLeased(EventCompStarted, corr, c.Attempt, c.LeaseExpiresAt)
			}
			c.Interrupted++ // the attempt's executor was lost
		}
	case StepStatusCompensated, StepStatusCompensationFailed:
		return refuse(ErrConflict, EventCompStarted, corr, "step is already %s", st.Status)
	default:
		return refuse(ErrConflict, EventCompStarted, corr, "step is %s: only a completed step is compensated", st.Status)
	}
	ttl := d.LeaseTTL
	if ttl == 0 {
		ttl = DefaultStepLease
	}
	st.Status = StepStatusCompensating
	st.UpdatedAt = now
	c.Attempt++
	c.RetryAfter = time.Time{}
	c.LeaseExpiresAt = now.Add(ttl)
	eff.Step = st
	eff.Event.Data = &CompStarted{StepName: st.StepName, Compensation: c.Step, Attempt: c.Attempt,
		Interrupted: c.Interrupted, LeaseTTL: ttl, LeaseExpiresAt: c.LeaseExpiresAt}
	return nil
}

// compensating loads a step whose compensation is under way, for the
// events that record an attempt's outcome.
func compensating(s State, t EventType, corr string) (*Step, error) {
	st, err := compStep(s, t, corr)
	if err != nil {
		return nil, err
	}
	if st.Status != StepStatusCompensating {
		return nil, refuse(ErrConflict, t, corr, "step is %s, not compensating", st.Status)
	}
	return st, nil
}

func applyCompRetryScheduled(s State, eff *Effect, d *CompRetryScheduled, now time.Time) error {
	st, err := compensating(s, EventCompRetryScheduled, eff.Event.CorrelationID)
	if err != nil {
		return err
	}
	st.UpdatedAt = now
	st.Compensation.Error = d.Error
	st.Compensation.RetryAfter = d.RetryAfter
	st.Compensation.LeaseExpiresAt = time.Time{}
	eff.Step = st
	eff.Event.Data = &CompRetryScheduled{StepName: st.StepName, Error: d.Error, RetryAfter: d.RetryAfter}
	return nil
}

// endComp ends a compensation with status to (compensated, or
// compensation_failed with failure).
func endComp(s State, eff *Effect, now time.Time, to StepStatus, failure *ErrorData) error {
	t := eff.Event.Type()
	st, err := compensating(s, t, eff.Event.CorrelationID)
	if err != nil {
		return err
	}
	st.Status = to
	st.UpdatedAt = now
	c := st.Compensation
	c.Error = failure
	c.RetryAfter, c.LeaseExpiresAt, c.EndedAt = time.Time{}, time.Time{}, now
	counts := &eff.Run.Compensations
	counts.Running = max(0, counts.Running-1)
	if to == StepStatusCompensated {
		counts.Succeeded++
		eff.Event.Data = &CompSucceeded{StepName: st.StepName}
	} else {
		counts.Failed++
		eff.Event.Data = &CompFailed{StepName: st.StepName, Error: failure}
	}
	eff.Step = st
	return nil
}

// compensationsPending is why run_deactivated is refused for a run whose
// compensations have not all ended: empty when none is pending.
func compensationsPending(r *Run) string {
	switch {
	case r.Compensations.Running > 0:
		return "compensations are still running"
	case r.Compensate && r.Compensations.Owed > 0:
		return "completed steps still owe their compensation"
	}
	return ""
}
