// Package engine is Skein's workflow engine: one handler for every queue
// message (run continuations and background steps alike), on any
// world.World. It is untyped (inputs, outputs and payloads are
// json.RawMessage); the typed SDK in package workflow sits on top of it.
//
// # The engine's parts
//
// The engine is a few types, each deciding one thing, each holding a
// pointer to the shared port and to the parts it calls, never to one
// above it. One delivery goes through them in this order:
//
//   - Engine (engine.go) decides which path a message takes: too early
//     (hop), delivered too often (failDeliveries, replace, recount), a
//     message naming steps (background) or a continuation (runLeases).
//   - gate (version.go) decides whether this executor takes the message
//     at all: a run of a version it does not run, or whose payloads it
//     cannot open, is sent back to the queue (refuseVersion, refuseKey).
//   - runLeases (runlease.go, stuck.go, leaseguard.go, leasetag.go)
//     decides who holds the run and for how long: it takes the run lease,
//     runs a session under it, renews it, watches the session for a
//     stuck workflow, releases it and goes on when more arrived.
//   - session (session.go and load.go, sticky.go, rest.go's session
//     half) is one continuation: it loads the log and replays the workflow
//     (the replayer, replay.go, coroutine.go) and loops until its deadline.
//     It calls only the parts below it (its committer and inflight, and
//     parts, engine.go).
//   - committer (commit.go, limits.go, hold.go's holdRun) decides what one
//     commit holds and whether it fits: the deliveries not yet committed
//     (pending, held), the plan the suspension needs (build), the fenced
//     Appends (commitPlan), a run over its limits (failOverLimit) or held
//     (holdRun). The session embeds it and passes itself down as two
//     narrow views, commitRun (its replayer, the run's end) and
//     commitSteps (inline capacity, starting or queueing the steps a
//     commit created): the committer holds no pointer to the session.
//   - inflight (inline.go, continuations.go, steplease.go, scheduler.go's
//     schedule) decides which steps run here, now, later or elsewhere: it
//     runs steps inline (the solo step on the session's own goroutine,
//     runSolo), asks the scheduler what is due and when to wake
//     (scheduler.go, pure), holds back or enqueues the excess, reads other
//     invocations' step leases when cold (steplease.go) and sends the
//     messages the run needs next (continuations.go). It asks the session
//     through inflightRun (its replayer, deliver, loadNew, the deadline,
//     and the loop runSolo moves to another goroutine).
//   - stepRunner (executor.go) runs one step attempt under its lease and
//     turns what the step returned into the outcome to record; outside a
//     session it records it too (record, recordFinal).
//   - rest (rest.go, cleanup.go, cascade.go, orphan.go) runs what follows
//     a run's end: its cleanup, its side effects on children, parent and
//     streams, the steps still running, and run_deactivated.
//   - compensator (compensate.go) runs the compensations a finished run
//     owes, from its rest.
//   - background (background.go, group.go) runs the steps a message
//     names, records their outcomes and takes the run on (runLeases).
//   - tracing and runSpan (trace.go) start the spans; port (port.go) holds
//     the World, the registry, the configuration, the logger and clock, the
//     log cache, and the writes and reads every part makes (append,
//     appendFenced, enqueue, finished, atRest, budget).
//
// Around them: every idempotency key is built in keys.go, every fixed
// duration is named in timing.go. A run whose replay diverges is held
// (hold.go); the workflow API refuses calls from goroutines the workflow
// started (guard.go); the workflow's logger stays quiet for history it
// already printed (logline.go); correlation IDs, tokens and randomness come
// from the run's deterministic source (ids.go). Compensations are recorded
// on the steps they undo: the workflow asks for them while active
// (compop.go), and a run's rest runs those its end asked for
// (compensate.go). CheckLog (check.go) replays a recorded log with no World
// and no session, through the same replayer, for the replay checker.
//
// # The life of a delivery
//
// Engine.HandleDelivery validates the message. One that arrives more than
// maxEarlyWait before its NotBefore hops (Engine.hop: dropped if its run
// has ended, otherwise enqueued again for the rest under keyHop). An
// engine pinned to some code versions (Config.AcceptVersion) then sends a
// message of another version's unfinished run back to the queue as a new
// message and acknowledges it (gate.refuseVersion, version.go). A little
// early, it sleeps. A message delivered more than Config.MaxDeliveries
// times fails its run, unless this engine cannot open the run (keyCheck:
// it is refused instead, and its receives are not carried on); a message
// that was refused for its version is sent again counting one delivery
// (recount: its receives may be refusals). A message naming steps (StepID, StepIDs) is a
// background delivery (executeBackground); any other is a continuation
// (continueRun). Whatever of these ends in world.ErrKeyUnavailable (the
// World cannot open the run's payloads: a missing or wrong encryption key)
// is sent back and acknowledged the same way (refuseKey, version.go).
// Whatever ends in world.ErrCorrupt (the run's stored data is damaged: a
// missing range of its log, a payload that does not verify) is a
// *PermanentError (corruptRun): retrying cannot repair the store, and the
// MaxDeliveries failure would append to a damaged log, so nothing is
// written and the run stays as stored for an operator, who restores what
// is missing and wakes it (`skein runs retry`).
//
// Every writer outside a session's replay (a client's cancellation, a
// failure on request, after MaxDeliveries, over a limit or from a blocked
// workflow, a cancelled parent's children, and the rest after a run's end:
// its cleanup, late step outcomes, compensations, run_deactivated) reads
// the run's whole log first, which the World checks, and appends fenced on
// its last sequence number (AppendFenced, fence.go), reading again when a
// live writer moved on: on a damaged log it writes nothing and returns the
// World's world.ErrCorrupt.
//
// A continuation takes the run lease (acquireRunLease). If it is held,
// the message is enqueued again (bounce: a delay doubling per hop, never
// past the holder's expiry, under keyBusy), never dropped while the run
// needs it; a message of a run at rest (ended and deactivated, or gone) is
// acknowledged instead of being sent again, on this path and on every other
// that re-sends one (atRest: keys sent back, a step's continuation).
// Under the lease
// (underLease, which renews it with keepLease; a session that loses it
// stops, see leaseguard.go), the session's run:
//
//  1. loads the log (loadNew: forward, page by page, on a cold start;
//     newest first back to the last known event afterwards), tracking the
//     run's status (track). A finished run only runs what follows its end
//     (endAndRest: a pending cleanup, afterTerminal, deactivate); a run
//     whose workflow is not registered fails.
//  2. rebuilds the workflow (prime): the workflow the run's last session
//     left takes in the new events (sticky.go), or a new coroutine replays
//     the in-memory log (rebuild), matching each creation event with what the code asks
//     for (replay.go). On a cold start, readStepLeases reads the current
//     lease of steps another invocation runs inline.
//  3. loops (session.loop): the deadline passed (port.budget:
//     Config.MaxInvocation from the start, or Config.BudgetMargin before
//     the context's deadline) makes it drain (no more starts); a run ended by another writer ends it (endForeign); a
//     divergence holds the run (holdRun); due waits complete
//     (fireDueWaits); held-back steps due are queued (flushDeferred).
//  4. builds the commit (build, commit.go): run_started if pending, the
//     step outcomes delivered but not committed, then either the terminal
//     event or the creations of the operations the code asked for, each
//     new step with its step_started while inline capacity lasts
//     (Config.InlineConcurrency), the rest to queue; and restarts of
//     existing steps the scheduler finds runnable.
//  5. commits it (commitPlan): in one Append fenced with IfLastSeq, or in
//     several when the World takes less (world.AppendFits). A refused
//     step_started or hook_disposed is dropped and the rest retried; any
//     other refusal means another writer appended: the session reads what
//     was appended, feeds it to the workflow when a replay would make the
//     same of it (absorb) or else rebuilds, and goes back to 3 (refresh).
//     Committed events join the log
//     (applyEvents) and their step_started launch the steps inline
//     (launch); the excess is held back for Config.BackgroundDelay and
//     then queued (enqueueSteps: as few messages as the inline capacity
//     allows, under keyStep or keySteps). A terminal commit ends the
//     session (rest, rest.go): the cleanup hook of a completed run
//     (cleanup.go), the end's side effects, then the steps still running
//     finish (cancelled only when the run was) and record their outcomes,
//     the compensations the run owes run (compensate.go), and the run is
//     deactivated; with nothing running, run_deactivated
//     commits with the terminal event.
//  6. with steps in flight, waits (waitInflight) until one ends, a timer
//     comes due, the deadline, or the next event poll (scheduler's
//     wakeAt). A step alone in flight runs on the session's own goroutine
//     (runSolo, see below). An outcome is delivered to the coroutine at
//     once (receive, deliver), before it is committed: the workflow runs
//     to its next suspension, and step 4 commits the outcome together with
//     what that suspension needs, one Append per serial step.
//  7. with nothing in flight or to commit, is idle (idle): it lingers in
//     process for a timer within Config.Linger, reads the log once more
//     (another writer's events go back to 3), queues every held-back step,
//     and ends, having enqueued what the run needs next: a continuation
//     under keyBudget if it is out of budget with steps ready, a lease
//     check (scheduleLeaseCheck, under keyLeaseCheck) if the next timer
//     is only another invocation's step lease, otherwise the continuation
//     of the next timer (scheduleTimer, under keyTimer), sent up to
//     maxWakeLead early so that it has loaded the run when the time comes.
//
// Then underLease parks the coroutine, releases the lease and reads the
// log once more if the run has steps this session did not settle
// (afterRelease): a background executor that finished one while the lease
// was held left the run to the holder. If anything arrived, the session
// takes the lease again and resumes with the log it has (resume); if the
// lease is taken, its new holder goes on; out of budget, it enqueues a
// continuation under keyAfter. A session that ended well leaves its log and
// its workflow, still suspended, to the run's next session in this process
// (logcache.go, sticky.go).
//
// A background delivery runs its steps. One step (executeStep) reads the
// step and the run, appends its step_started (Queued), runs it, records
// its outcome (record) and wakes the run (wakeAfterStep, under keyDone);
// a retry queues the step again for its time (keyStep). Several
// (executeGroup) start in as few Appends as the World takes (startGroup),
// run concurrently, and their outcomes are recorded in batches (runGroup,
// recordGroup), then the run is woken once (keyDoneGroup). A start refused
// because the step is not yet due or leased by a queued attempt is queued
// again for that time (requeueRefusedStart, keyStepEarly, keyStepLeased).
// wakeAfterStep takes the run lease: if it gets it, this invocation
// continues the run itself, as above, with no message; if it is held, the
// holder sees the outcome after its release (afterRelease argues why one
// of the two always does); out of budget, it enqueues a continuation. A
// lease taken for a step message is owned under the message's tag
// (msgTag): another delivery of the same message that finds it held, whose
// acknowledgement would delete the message a dead holder relies on, first
// sends a continuation for the lease's expiry (coverHolder, keyCover).
//
// A wake-up is a continuation from outside the session: a run started
// (StartKey) or cancelled (CancelKey) by its client, a hook's payload
// (ResumeHook, keyHook), a held run retried (keyHeld, keyRetryHeld), a
// run failed on request (FailRun, keyFail) or from a foreign goroutine
// (failForeign, keyMisuse), or a timer's continuation. It runs as any continuation; a timer's, sent
// early, loads the run, then lingers in step 7 until the timer is due,
// and step 3 completes the wait. Side effects follow committed state:
// messages are enqueued, streams closed and parent runs notified only
// after the event that justifies them has committed.
//
// # Lost executors
//
// An attempt whose executor dies or is cut off records no outcome: once its
// lease expires, the step is started again. world.Apply counts such starts
// (world.Step.Interrupted) apart from the step's failures: the attempt its
// retry policy and StepInfo.Attempt count is Attempt-Interrupted, and
// Config.MaxInterruptions bounds the interruptions (STEP_EXECUTOR_LOST). On a
// cold start, a session that finds another invocation's inline attempt
// running reads the step's current lease (readStepLeases) rather than trust
// the expiry step_started recorded: renewals extend a lease, and a World that
// knows its holder is gone (a local store reopened) expires it at once.
//
// # Sticky execution and one commit per serial step
//
// The workflow function runs as a coroutine: its own goroutine, handing
// control back and forth with the engine by the runtime's coroutine switches
// (iter.Pull) so that exactly one of them runs at a time. The coroutine stays
// alive for the whole invocation, so the log is read and replayed once on a
// cold start and never again; and between invocations, kept with the run's
// log (sticky.go), so that the run's next continuation in this process feeds
// it the events appended since instead of replaying it from its start (a
// webhook flood costs each delivery what it brings). A kept coroutine goes on
// only when the log extends exactly what it consumed with events no session
// writes for the code; on any doubt the log is replayed, as on a cold start. Inline steps run as goroutines, except a step
// alone in flight (a serial workflow's), which runs on the invocation's own
// goroutine where it would otherwise wait for it; if it is still running when
// the invocation must wake (a timer, the event poll, the budget), the
// invocation carries on on a new goroutine. A serial step then costs no
// goroutine handoff at all. When an inline step finishes, its result is
// delivered to the coroutine before it is committed; the workflow runs forward
// to its next suspension, and the step's completion is committed together with
// what the suspension needs (the next step's step_created and step_started, or
// run_completed) in one Append, fenced with AppendParams.IfLastSeq. A refused
// fence means another writer (a background step, a hook payload, a
// cancellation) appended meanwhile: the coroutine is discarded, the new events
// are loaded, and the workflow is rebuilt by replaying the in-memory log,
// after which the held results are delivered again.
//
// # What is secret
//
// Run IDs are not secrets (they appear in URLs, logs and answers), so
// nothing that grants access is derived from them alone. Correlation IDs,
// Context.NewID and Context.Rand are seeded by the run ID: anyone who knows
// it can compute them. Generated hook tokens (Context.NewToken) and the tag
// of a child run's notification token (Context.SecretTag) are derived from
// the run's secret, 32 bytes from crypto/rand that the client draws when it
// creates the run and records in run_created: replay finds the secret in the
// log and draws the same tokens, and nobody without the log can. A run
// created before run secrets has none and keeps the tokens it drew from its
// run ID, so that it replays as it ran. Whoever can read the log (or the
// hooks) can read the tokens anyway.
//
// # Replay
//
// Operations (steps, hooks, waits) get correlation IDs from a ULID source
// seeded by the run ID, with the run ID's timestamp; Context.Rand is seeded
// the same way and Context.Now advances with the consumed events. Replay
// matches each recorded creation event (step_created, hook_created or
// hook_conflict, wait_created), in log order, with the operations the code
// asks for, comparing kind, name and ID, and for a step the digest of its
// encoded input that step_created records (runrules.DigestInput; logs written
// without one compare names only); a mismatch holds the run with
// REPLAY_DIVERGENCE naming both sides (run_held, see hold.go): nothing more
// runs for it, and it is replayed again with backoff or on request
// (RetryHeldRun), so that deploying code that replays its log resumes it,
// until then it can be cancelled or failed (FailRun). Completions are applied in log order,
// so Race-style selections follow the log.
package engine
