// Package world is the seam between Skein's engine and the infrastructure it
// runs on. A World is Storage + Queue + Streamer:
//
//   - Storage keeps each run's event log and the entities it materializes
//     (runs, steps, hooks, waits). Every state change is an event; Append
//     writes one or more events of a run and their effects in one atomic
//     commit, so a serial step costs one durable round trip.
//   - Queue delivers messages at least once, with a delay and an idempotency
//     key; Consumer is its receiving side outside Lambda.
//   - Streamer stores ordered output chunks per run and stream name.
//
// # State machine
//
// The rules deciding whether an event may be appended are pure functions
// shared by every World: Apply takes the current State and an event and
// returns the Effect to commit, or a typed refusal. Refusals match the
// sentinel errors, each standing for an HTTP status (Status):
//
//   - ErrNotFound (404): missing run, step, hook or wait.
//   - ErrConflict (409): duplicate creating or terminal event; any write to a
//     terminal step; creating a step, hook or wait on a finished run; starting
//     a step whose current attempt still holds its execution lease.
//   - ErrGone (410): run_started or run_held on a finished run; starting,
//     retrying or (unless it is running) completing a step of a finished
//     run; a hook payload or wait completion for a finished run.
//   - ErrTooEarly (425): step_started before the step's retry time.
//   - ErrLimitExceeded (413): the event would pass one of the run's Limits
//     (State.Limits: a payload over MaxPayload, or any event but a run's end
//     or hold once it holds MaxEvents); a *LimitError.
//
// Some rules are stricter than a plain status machine: step_started succeeds only for a pending step or a
// running one whose lease has expired (crash recovery), so attempts are
// counted once; a repeated run_cancelled appends nothing, so a run has exactly
// one terminal event; run_created may carry an idempotency key; step_created
// may carry a digest of its input for replay to compare.
//
// A run_held moves a pending, running or held run to held (RunHold says why
// and when it is retried): not an end, so everything a running run accepts
// a held one accepts too, and only the engine's run_started (the code
// replays the log again) or a terminal event clears the hold.
//
// When a run ends, a World deletes its active hooks, freeing their tokens,
// and its waits. A hook_created whose token another active hook holds is
// appended as hook_conflict naming the holder's run.
//
// A run's end comes in two parts (deactivate.go): its terminal event fixes
// the outcome, run_deactivated records that nothing of it is pending or
// running any more. In between, steps that were running record their
// results, a completed run's cleanup records its outcome, and compensations
// run.
//
// A step may declare its compensation, the step that undoes it
// (StepCreated.Compensation, kept as Step.Compensation). Once the step has
// completed, the comp_* events, correlated to the step itself, record its
// compensation: comp_started claims an attempt under a lease (as
// step_started does), comp_retry_scheduled records a failed attempt,
// comp_succeeded and comp_failed end it, and the step moves completed ->
// compensating -> compensated | compensation_failed. They are refused
// like the step events (404 no step; 410 once the run is deactivated; 409
// a step that declared none, is not completed or was compensated; 425
// before a retry's time; 409 with the attempt and the lease's end while an
// attempt's lease lives), so a compensation is recorded at most once. The run counts its
// compensations (Run.Compensations); a run_failed or run_cancelled may ask
// for its completed steps to be compensated (Run.Compensate), and
// run_deactivated is refused while a compensation runs or, for a run that
// asked, is owed:
//
//	Events: []EventInput{
//		{CorrelationID: stepID, Data: &CompStarted{LeaseTTL: time.Minute}},
//		{CorrelationID: stepID, Data: &CompSucceeded{}},
//	}
//
// An attribute_set merges its keys into the run's attributes (set at
// creation with run_created's), in any run status, a finished one
// included. Keys, values and the run's count are bounded
// (MaxAttributes, MaxAttributeKeyLength, MaxAttributeValueLength): an
// attribute_set or run_created out of bounds is refused with ErrInvalid
// naming the key, and the run is left as it was. ListRunsParams.Attribute
// lists the runs with one attribute:
//
//	Events: []EventInput{{Data: &AttributeSet{Attributes: map[string]string{"tenant": "acme"}}}}
//	ListRuns(ctx, &ListRunsParams{Attribute: &AttributeFilter{Key: "tenant", Value: "acme"}})
//
// # IDs and pagination
//
// IDs are a prefix (wrun_, step_, hook_, wait_, attr_, evnt_, strm_) and a monotonic
// ULID (IDSource). Events also carry a dense, 1-based sequence number per run,
// the write fence. Listings return a Page whose Cursor is set on every
// non-empty page, the last included; cursors are opaque and typed by listing
// (EncodeCursor, DecodeCursor), and a foreign one is ErrInvalid.
//
// # Watching
//
// A World may be a Watcher: it delivers the events of one run, or of every
// run, as they commit, each with a cursor that resumes right after it (one
// run: RunCursor, the same on every World; every run: the World's own).
// Skein uses a World's Watcher when it has one and polls the World's read
// API otherwise, so watching works on any World (a World needs no Watcher
// of its own to pass the conformance suite's watch group). FoldEvents
// rebuilds a run's state from its log, as of one event: what a
// subscription's snapshot is.
//
// The package imports no AWS code. The conformance suite every World passes
// is world/worldtest.
package world
