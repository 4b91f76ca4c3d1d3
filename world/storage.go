package world

import (
	"context"
	"fmt"
	"time"
)

// World is the seam every backend implements: storage of the event log and
// its materialized entities, a delayed queue, and output streams. The SDK and
// the engine depend on nothing else.
type World interface {
	Storage
	Queue
	Streamer
	// Close releases the World's resources. It does not delete data.
	Close() error
}

// Storage persists runs, steps, hooks, waits and the event log. Every write is
// an event appended with Append; the entity it concerns changes in the same
// atomic commit.
type Storage interface {
	// Append applies Events, in order, to one run in a single atomic commit:
	// either every event is appended (densely sequenced) with its effect, or
	// none is and the error is the refusal of one event (see Apply): a
	// *RefusalError whose Index is the refused event's position in Events,
	// or a *LimitError. A hook_created whose token is held by another
	// active hook is appended as a hook_conflict instead.
	Append(ctx context.Context, p *AppendParams) (*AppendResult, error)

	GetRun(ctx context.Context, p *GetRunParams) (*Run, error)
	// ListRuns lists runs newest first (Pagination.Descending does not
	// apply), optionally filtered by workflow name, status and attribute.
	// An invalid attribute filter is an ErrInvalid error.
	ListRuns(ctx context.Context, p *ListRunsParams) (*Page[Run], error)

	GetStep(ctx context.Context, p *GetStepParams) (*Step, error)
	// ListSteps lists a run's steps in creation order.
	ListSteps(ctx context.Context, p *ListStepsParams) (*Page[Step], error)

	// ListEvents lists a run's events in sequence order (or reverse with
	// Descending). Every non-empty page carries a cursor, the last page
	// included, so a reader can resume from it and get exactly what was
	// appended since.
	ListEvents(ctx context.Context, p *ListEventsParams) (*Page[Event], error)
	// ListEventsByCorrelation lists the events of one step, hook or wait.
	ListEventsByCorrelation(ctx context.Context, p *ListEventsByCorrelationParams) (*Page[Event], error)

	GetHook(ctx context.Context, p *GetHookParams) (*Hook, error)
	GetHookByToken(ctx context.Context, p *GetHookByTokenParams) (*Hook, error)
	// ListHooks lists active hooks in creation order, optionally of one run.
	ListHooks(ctx context.Context, p *ListHooksParams) (*Page[Hook], error)

	// AcquireRunLease takes the per-run lease: it fails fast with a
	// *RefusalError of ErrLeaseHeld (Holder, Until) when another owner holds
	// an unexpired lease. The same owner re-acquiring extends its lease.
	AcquireRunLease(ctx context.Context, p *RunLeaseParams) (*RunLease, error)
	// RenewRunLease extends a lease the owner holds, or fails with ErrLeaseLost.
	RenewRunLease(ctx context.Context, p *RunLeaseParams) (*RunLease, error)
	// ReleaseRunLease gives the lease up. It is tolerant: releasing a lease
	// that expired or that another owner now holds is not an error.
	ReleaseRunLease(ctx context.Context, p *RunLeaseParams) error

	// RenewStepLease extends the execution lease of a running step's current
	// attempt, or with p.Compensation that of the running attempt of a
	// compensating step's compensation. It fails with ErrNotFound for a
	// missing step and ErrConflict when the step is not running that attempt.
	RenewStepLease(ctx context.Context, p *RenewStepLeaseParams) (*Step, error)
}

// AppendLimiter is implemented by a World whose Append takes a bounded
// commit (dynamoworld: one DynamoDB transaction of at most 100 items).
// AppendFits returns how many of events, from the first, one Append
// accepts: an Append of events[:AppendFits(events)] is never refused for
// its size, unless its first event alone is too big (an ErrInvalid that no
// split can help). It is at least 1 when events is not empty, and a pure function
// of the events (no I/O). A writer with more to commit appends it in
// several fenced Appends, in order (the engine does, see AppendFits).
// A World that does not implement it takes commits of any size.
type AppendLimiter interface {
	AppendFits(events []EventInput) int
}

// AppendFits returns how many of events, from the first, one Append of s
// accepts: s's own answer when it is an AppendLimiter (clamped to at least
// 1 and at most len(events)), otherwise all of them.
func AppendFits(s Storage, events []EventInput) int {
	l, ok := s.(AppendLimiter)
	if !ok || len(events) == 0 {
		return len(events)
	}
	return min(max(l.AppendFits(events), 1), len(events))
}

// EventInput is one event proposed for appending.
type EventInput struct {
	CorrelationID string
	Data          EventData
}

// AppendParams proposes a commit of one or more events to one run.
type AppendParams struct {
	RunID  string
	Events []EventInput
	// IfLastSeq, when positive, makes the commit conditional: it is refused
	// with ErrConflict (not a *RefusalError) unless the run's newest event
	// has this sequence number.
	IfLastSeq int64
}

// AppendResult reports a commit.
type AppendResult struct {
	// Run is the run's state after the commit.
	Run *Run
	// Results has one entry per input event, in order.
	Results []EventResult
}

// EventResult is the outcome of one event of a commit.
type EventResult struct {
	// Event is the appended event, nil when the request was satisfied without
	// appending (run_started on a running run, a repeated run_cancelled).
	Event *Event
	// Step, Hook and Wait are the entity as the event left it (Hook is nil for
	// a hook_conflict and for hook_disposed; for hook_received it is the hook
	// that received the payload, which Effect does not carry: Worlds take it
	// from State).
	Step *Step
	Hook *Hook
	Wait *Wait
}

// GetRunParams names a run.
type GetRunParams struct{ RunID string }

// ListRunsParams filters and pages runs.
type ListRunsParams struct {
	WorkflowName string
	Status       RunStatus
	// Attribute, when set, lists only the runs with that attribute (key
	// and value); it combines with the other filters.
	Attribute *AttributeFilter
	Pagination
}

// GetStepParams names a step.
type GetStepParams struct{ RunID, StepID string }

// ListStepsParams pages a run's steps.
type ListStepsParams struct {
	RunID string
	Pagination
}

// ListEventsParams pages a run's events.
type ListEventsParams struct {
	RunID string
	Pagination
}

// ListEventsByCorrelationParams pages the events of one entity.
type ListEventsByCorrelationParams struct {
	RunID         string
	CorrelationID string
	Pagination
}

// GetHookParams names a hook.
type GetHookParams struct{ HookID string }

// GetHookByTokenParams names a hook by its token.
type GetHookByTokenParams struct{ Token string }

// ListHooksParams pages active hooks, of one run when RunID is set.
type ListHooksParams struct {
	RunID string
	Pagination
}

// RunLeaseParams names a run lease and its owner. TTL applies to acquire and
// renew.
type RunLeaseParams struct {
	RunID string
	Owner string
	TTL   time.Duration
}

// RunLease is a held per-run lease.
type RunLease struct {
	RunID     string
	Owner     string
	ExpiresAt time.Time
}

// RenewStepLeaseParams extends a running step's execution lease. With
// Compensation it extends the lease of the step's compensation attempt
// instead (Step.Compensation.LeaseExpiresAt): the step must be compensating,
// at compensation attempt Attempt, with that attempt running (not waiting
// for a retry).
type RenewStepLeaseParams struct {
	RunID        string
	StepID       string
	Attempt      int
	TTL          time.Duration
	Compensation bool
}

// CompLeaseRenewable reports whether the compensation attempt p names is
// the one st runs now (see RenewStepLeaseParams.Compensation), the judgement
// every World makes before it renews a compensation's lease.
func (p *RenewStepLeaseParams) CompLeaseRenewable(st *Step) bool {
	c := st.Compensation
	return st.Status == StepStatusCompensating && c != nil && c.Attempt == p.Attempt && !c.LeaseExpiresAt.IsZero()
}

// LeaseTTL validates p for a run-lease call and returns the lease duration:
// p.TTL, or defaultTTL when it is zero. A nil p, a missing run ID or owner,
// or a negative TTL is an ErrInvalid error.
func (p *RunLeaseParams) LeaseTTL(defaultTTL time.Duration) (time.Duration, error) {
	switch {
	case p == nil:
		return 0, fmt.Errorf("%w: nil RunLeaseParams", ErrInvalid)
	case p.RunID == "":
		return 0, fmt.Errorf("%w: run lease: run ID required", ErrInvalid)
	case p.Owner == "":
		return 0, fmt.Errorf("%w: run lease: owner required", ErrInvalid)
	case p.TTL < 0:
		return 0, fmt.Errorf("%w: run lease: negative TTL %s", ErrInvalid, p.TTL)
	case p.TTL == 0:
		return defaultTTL, nil
	}
	return p.TTL, nil
}
