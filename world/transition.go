package world

import (
	"fmt"
	"maps"
	"time"
)

// State is what the state machine needs to know to judge one event. A World
// loads it (inside its transaction) and passes it to Apply.
type State struct {
	// Run is the event's run, nil when it does not exist.
	Run *Run
	// Step, Hook and Wait are the entity named by the event's correlation ID,
	// nil when absent. Only active hooks exist.
	Step *Step
	Hook *Hook
	Wait *Wait
	// TokenHolder is, for hook_created, the active hook (of any run) holding
	// the requested token, nil when the token is free.
	TokenHolder *Hook
	// IdempotencyRunID is, for run_created with an idempotency key, the run
	// already started with that key, empty when none.
	IdempotencyRunID string
	// Limits are the World's limits (Limits.WithDefaults of its
	// configuration); a zero field is not checked, as when a recorded log
	// is folded.
	Limits Limits
}

// Effect is what appending an event does. Unless Skip, the World must, in one
// atomic commit: append Event, store Run, store Step/Hook/Wait when non-nil,
// delete the hook DeleteHookID, and when EndsRun delete every active hook of
// the run (freeing its token) and every wait of the run.
type Effect struct {
	// Skip means the request succeeded but nothing is appended: run_started on
	// a running run, run_cancelled on a cancelled one.
	Skip bool
	// Event is the event to append, stamped with Seq and CreatedAt. A
	// hook_created whose token is taken becomes a hook_conflict here.
	Event Event
	// Run is the run's new state (LastSeq advanced). With Skip it is the
	// unchanged run.
	Run *Run
	// Step, Hook and Wait are new or updated entities.
	Step *Step
	Hook *Hook
	Wait *Wait
	// DeleteHookID names a hook to delete (hook_disposed).
	DeleteHookID string
	// EndsRun: the run reached a terminal state.
	EndsRun bool
}

// Apply judges ev against s at time now. It returns the effect, or a typed
// refusal: *RefusalError (ErrNotFound, ErrConflict, ErrGone, ErrTooEarly,
// ErrInvalid; its fields tell a step not yet due, a step leased and a run
// that exists apart) or *LimitError (an event that would pass s.Limits).
// Apply is pure: it never modifies s or ev.
//
// The caller sets ev.RunID, ev.EventID, ev.CorrelationID and ev.Data; Apply
// sets Seq and CreatedAt.
func Apply(s State, ev Event, now time.Time) (Effect, error) {
	if err := ValidateEvent(ev); err != nil {
		return Effect{}, err
	}
	if err := ValidateID(PrefixRun, ev.RunID); err != nil {
		return Effect{}, invalidf(ev.Type(), ev.RunID, "%v", err)
	}
	sz := measurePayloads(ev.Data)
	if err := checkLimits(s, ev, sz); err != nil {
		return Effect{}, err
	}
	if ev.Type() == EventRunCreated {
		return applyRunCreated(s, ev, now, sz.total)
	}
	t := ev.Type()
	if s.Run == nil {
		return Effect{}, refuse(ErrNotFound, t, ev.RunID, "run does not exist")
	}
	run := *s.Run
	run.LastSeq++
	run.UpdatedAt = now
	ev.Seq = run.LastSeq
	ev.CreatedAt = now
	eff := Effect{Event: ev, Run: &run}
	var err error
	switch d := ev.Data.(type) {
	case *RunStarted:
		err = applyRunStarted(s, &eff, now)
	case *RunCompleted:
		err = endRun(s, &eff, now, RunStatusCompleted, func(r *Run) {
			r.Output = d.Output
			if d.Cleanup {
				r.Cleanup = CleanupPending
			}
		})
	case *RunFailed:
		err = endRun(s, &eff, now, RunStatusFailed, func(r *Run) { r.Error = d.Error; r.ErrorCode = d.ErrorCode; r.Compensate = d.Compensate })
	case *RunCancelled:
		if s.Run.Status == RunStatusCancelled {
			return Effect{Skip: true, Run: s.Run}, nil
		}
		err = endRun(s, &eff, now, RunStatusCancelled, func(r *Run) { r.CancelReason = d.Reason; r.Compensate = d.Compensate })
	case *RunHeld:
		err = applyRunHeld(s, &eff, d, now)
	case *StepCreated:
		err = applyStepCreated(s, &eff, d, now)
	case *StepStarted:
		err = applyStepStarted(s, &eff, d, now)
	case *StepCompleted:
		err = endStep(s, &eff, now, StepStatusCompleted, func(st *Step) {
			st.Output = d.Result
			if compensable(st) {
				eff.Run.Compensations.Owed++
			}
		})
	case *StepFailed:
		err = endStep(s, &eff, now, StepStatusFailed, func(st *Step) { st.Error = d.Error })
	case *StepRetrying:
		err = applyStepRetrying(s, &eff, d, now)
	case *RunDeactivated:
		err = applyRunDeactivated(s, &eff, now)
	case *RunCleanedUp:
		err = applyRunCleanedUp(s, &eff, d)
	case *HookCreated:
		err = applyHookCreated(s, &eff, d, now)
	case *HookConflict:
		err = refuse(ErrInvalid, t, ev.CorrelationID, "hook_conflict is written by the World only")
	case *HookReceived:
		err = applyHookReceived(s, &eff, d)
	case *HookDisposed:
		err = applyHookDisposed(s, &eff, d)
	case *WaitCreated:
		err = applyWaitCreated(s, &eff, d, now)
	case *WaitCompleted:
		err = applyWaitCompleted(s, &eff, d, now)
	case *AttributeSet:
		err = applyAttributeSet(&eff, d)
	case *CompStarted:
		err = applyCompStarted(s, &eff, d, now)
	case *CompRetryScheduled:
		err = applyCompRetryScheduled(s, &eff, d, now)
	case *CompSucceeded:
		err = endComp(s, &eff, now, StepStatusCompensated, nil)
	case *CompFailed:
		err = endComp(s, &eff, now, StepStatusCompensationFailed, d.Error)
	default:
		err = refuse(ErrInvalid, t, ev.RunID, "unsupported event")
	}
	if err != nil {
		return Effect{}, err
	}
	if eff.Skip {
		return Effect{Skip: true, Run: s.Run}, nil
	}
	if eff.Event.Type() != ev.Type() {
		sz = measurePayloads(eff.Event.Data) // recorded as another event (hook_conflict)
	}
	eff.Run.PayloadBytes += sz.total
	return eff, nil
}

func applyRunCreated(s State, ev Event, now time.Time, payloadBytes int64) (Effect, error) {
	d := ev.Data.(*RunCreated)
	if s.Run != nil {
		return Effect{}, &RefusalError{Kind: ErrConflict, EventType: EventRunCreated, Entity: s.Run.RunID, Reason: "run already exists"}
	}
	if d.IdempotencyKey != "" && s.IdempotencyRunID != "" {
		return Effect{}, &RefusalError{Kind: ErrConflict, EventType: EventRunCreated, Entity: s.IdempotencyRunID, Key: d.IdempotencyKey,
			Reason: fmt.Sprintf("idempotency key %q already started run %s", d.IdempotencyKey, s.IdempotencyRunID)}
	}
	ev.Seq = 1
	ev.CreatedAt = now
	run := &Run{
		RunID: ev.RunID, WorkflowName: d.WorkflowName, DeploymentID: d.DeploymentID, Status: RunStatusPending,
		Input: d.Input, ExecutionContext: d.ExecutionContext, Attributes: maps.Clone(d.Attributes),
		IdempotencyKey: d.IdempotencyKey, Version: d.Version, LastSeq: 1, CreatedAt: now, UpdatedAt: now,
		PayloadBytes: payloadBytes,
	}
	return Effect{Event: ev, Run: run}, nil
}

func applyRunStarted(s State, eff *Effect, now time.Time) error {
	switch s.Run.Status {
	case RunStatusRunning:
		eff.Skip = true
		return nil
	case RunStatusPending:
		eff.Run.Status = RunStatusRunning
		eff.Run.StartedAt = now
		return nil
	case RunStatusHeld:
		// The run goes on: the code now replays its log.
		eff.Run.Status = RunStatusRunning
		eff.Run.Hold = nil
		if eff.Run.StartedAt.IsZero() {
			eff.Run.StartedAt = now
		}
		return nil
	default:
		return refuse(ErrGone, EventRunStarted, s.Run.RunID, "run is %s", s.Run.Status)
	}
}

func endRun(s State, eff *Effect, now time.Time, to RunStatus, set func(*Run)) error {
	if s.Run.Status.Terminal() {
		return refuse(ErrConflict, eff.Event.Type(), s.Run.RunID, "run is already %s", s.Run.Status)
	}
	eff.Run.Status = to
	eff.Run.CompletedAt = now
	eff.Run.Hold = nil
	set(eff.Run)
	eff.EndsRun = true
	return nil
}

// applyRunHeld holds a pending, running or held run; a finished run is
// gone. Since is kept from an earlier hold the run is still in.
func applyRunHeld(s State, eff *Effect, d *RunHeld, now time.Time) error {
	if s.Run.Status.Terminal() {
		return refuse(ErrGone, EventRunHeld, s.Run.RunID, "run is %s", s.Run.Status)
	}
	since := now
	if h := s.Run.Hold; s.Run.Status == RunStatusHeld && h != nil && !h.Since.IsZero() {
		since = h.Since
	}
	eff.Run.Status = RunStatusHeld
	eff.Run.Hold = &RunHold{ErrorCode: d.ErrorCode, Error: d.Error, Attempt: d.Attempt, Since: since, RetryAt: d.RetryAt}
	return nil
}

// childOfLiveRun refuses creating a child entity on a finished run (409).
func childOfLiveRun(s State, t EventType, corr string) error {
	if s.Run.Status.Terminal() {
		return refuse(ErrConflict, t, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	return nil
}

func applyStepCreated(s State, eff *Effect, d *StepCreated, now time.Time) error {
	corr := eff.Event.CorrelationID
	if err := childOfLiveRun(s, EventStepCreated, corr); err != nil {
		return err
	}
	if s.Step != nil {
		return refuse(ErrConflict, EventStepCreated, corr, "step already exists")
	}
	eff.Step = &Step{
		RunID: s.Run.RunID, StepID: corr, StepName: d.StepName, Status: StepStatusPending,
		Input: d.Input, CreatedAt: now, UpdatedAt: now,
	}
	if d.Compensation != "" {
		eff.Step.Compensation = &StepCompensation{Step: d.Compensation}
	}
	return nil
}

// liveStep loads the step for a step event and applies the refusals common
// to all of them: missing step (404) and terminal step (409).
func liveStep(s State, t EventType, corr string) (*Step, error) {
	if s.Step == nil {
		return nil, refuse(ErrNotFound, t, corr, "step does not exist")
	}
	if s.Step.Status.Terminal() {
		return nil, refuse(ErrConflict, t, corr, "step is already %s", s.Step.Status)
	}
	st := *s.Step
	return &st, nil
}

func applyStepStarted(s State, eff *Effect, d *StepStarted, now time.Time) error {
	corr := eff.Event.CorrelationID
	st, err := liveStep(s, EventStepStarted, corr)
	if err != nil {
		return err
	}
	if s.Run.Status.Terminal() {
		return refuse(ErrGone, EventStepStarted, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	if st.RetryAfter.After(now) {
		return tooEarly(EventStepStarted, corr, st.RetryAfter)
	}
	if st.Status == StepStatusRunning && st.LeaseExpiresAt.After(now) {
		return stepLeased(EventStepStarted, corr, st.Attempt, st.LeaseExpiresAt)
	}
	ttl := d.LeaseTTL
	if ttl == 0 {
		ttl = DefaultStepLease
	}
	if st.Status == StepStatusRunning {
		// The previous attempt recorded no outcome and its lease has
		// expired: its executor was lost.
		st.Interrupted++
	}
	st.Status = StepStatusRunning
	st.Attempt++
	st.RetryAfter = time.Time{}
	st.LeaseExpiresAt = now.Add(ttl)
	st.UpdatedAt = now
	if st.StartedAt.IsZero() {
		st.StartedAt = now
	}
	eff.Step = st
	eff.Event.Data = &StepStarted{StepName: st.StepName, Attempt: st.Attempt, Interrupted: st.Interrupted, LeaseTTL: ttl, LeaseExpiresAt: st.LeaseExpiresAt, Queued: d.Queued}
	return nil
}

func endStep(s State, eff *Effect, now time.Time, to StepStatus, set func(*Step)) error {
	corr := eff.Event.CorrelationID
	t := eff.Event.Type()
	st, err := liveStep(s, t, corr)
	if err != nil {
		return err
	}
	// Completing a running step of a finished run is allowed: its result is
	// recorded. Anything else on a finished run is gone.
	if s.Run.Status.Terminal() && st.Status != StepStatusRunning {
		return refuse(ErrGone, t, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	st.Status = to
	st.CompletedAt = now
	st.UpdatedAt = now
	st.LeaseExpiresAt = time.Time{}
	st.RetryAfter = time.Time{}
	set(st)
	eff.Step = st
	return nil
}

func applyStepRetrying(s State, eff *Effect, d *StepRetrying, now time.Time) error {
	corr := eff.Event.CorrelationID
	st, err := liveStep(s, EventStepRetrying, corr)
	if err != nil {
		return err
	}
	if s.Run.Status.Terminal() {
		return refuse(ErrGone, EventStepRetrying, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	st.Status = StepStatusPending
	st.Error = d.Error
	st.RetryAfter = d.RetryAfter
	st.LeaseExpiresAt = time.Time{}
	st.UpdatedAt = now
	eff.Step = st
	return nil
}

func applyHookCreated(s State, eff *Effect, d *HookCreated, now time.Time) error {
	corr := eff.Event.CorrelationID
	if err := childOfLiveRun(s, EventHookCreated, corr); err != nil {
		return err
	}
	if s.Hook != nil {
		return refuse(ErrConflict, EventHookCreated, corr, "hook already exists")
	}
	if s.TokenHolder != nil {
		eff.Event.Data = &HookConflict{Token: d.Token, ConflictingRunID: s.TokenHolder.RunID, Patches: d.Patches}
		return nil
	}
	eff.Hook = &Hook{
		RunID: s.Run.RunID, HookID: corr, Token: d.Token, Metadata: d.Metadata,
		IsWebhook: d.IsWebhook, CreatedAt: now,
	}
	return nil
}

func applyHookReceived(s State, eff *Effect, d *HookReceived) error {
	corr := eff.Event.CorrelationID
	if s.Hook == nil {
		return refuse(ErrNotFound, EventHookReceived, corr, "hook does not exist or was disposed")
	}
	if d.Token != "" && d.Token != s.Hook.Token {
		// The caller found the hook by this token (a token index): an index
		// that names a hook holding another token is damaged or edited.
		return refuse(ErrCorrupt, EventHookReceived, corr, "hook %s of run %s does not hold the token it was found by: the token's index names the wrong hook", corr, s.Run.RunID)
	}
	if s.Run.Status.Terminal() {
		return refuse(ErrGone, EventHookReceived, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	eff.Event.Data = &HookReceived{Token: s.Hook.Token, Payload: d.Payload}
	return nil
}

func applyHookDisposed(s State, eff *Effect, d *HookDisposed) error {
	corr := eff.Event.CorrelationID
	if s.Hook == nil {
		return refuse(ErrNotFound, EventHookDisposed, corr, "hook does not exist or was disposed")
	}
	eff.DeleteHookID = corr
	eff.Event.Data = &HookDisposed{Token: s.Hook.Token}
	return nil
}

func applyWaitCreated(s State, eff *Effect, d *WaitCreated, now time.Time) error {
	corr := eff.Event.CorrelationID
	if err := childOfLiveRun(s, EventWaitCreated, corr); err != nil {
		return err
	}
	if s.Wait != nil {
		return refuse(ErrConflict, EventWaitCreated, corr, "wait already exists")
	}
	eff.Wait = &Wait{RunID: s.Run.RunID, WaitID: corr, Status: WaitStatusWaiting, ResumeAt: d.ResumeAt, CreatedAt: now}
	return nil
}

func applyWaitCompleted(s State, eff *Effect, d *WaitCompleted, now time.Time) error {
	corr := eff.Event.CorrelationID
	if s.Wait == nil {
		return refuse(ErrNotFound, EventWaitCompleted, corr, "wait does not exist")
	}
	if s.Wait.Status == WaitStatusCompleted {
		return refuse(ErrConflict, EventWaitCompleted, corr, "wait already completed")
	}
	if s.Run.Status.Terminal() {
		return refuse(ErrGone, EventWaitCompleted, corr, "run %s is %s", s.Run.RunID, s.Run.Status)
	}
	w := *s.Wait
	w.Status = WaitStatusCompleted
	w.CompletedAt = now
	eff.Wait = &w
	eff.Event.Data = &WaitCompleted{ResumeAt: w.ResumeAt}
	return nil
}
