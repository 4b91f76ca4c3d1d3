// Package engine is Skein's workflow engine: one handler for every queue
// message (run continuations and background steps alike), on any world.World. It is untyped (inputs, outputs and payloads are
// json.RawMessage); the typed SDK in package workflow sits on top of it.
//
// # Messages
//
// Engine.Handle takes one queue message. With step IDs it executes those steps
// (background steps, their attempts marked world.StepStarted.Queued) and then
// takes their run on: if the run lease is free, it continues the run itself,
// in the same invocation; if it is held, the holder does, as it re-reads the
// log after releasing the lease (session.afterRelease argues why one of the
// two always does). A fan-out therefore costs one invocation per message and
// no continuation messages. Nobody watches a queued attempt's lease: if its
// executor dies, the unacknowledged message comes back. Without step IDs it
// continues the run: it takes the run lease (a continuation that finds the
// lease held is re-enqueued with a short delay, never dropped), loads the log
// incrementally, runs the workflow, commits what its suspension needs, runs up
// to Config.InlineConcurrency ready steps inline as goroutines and queues the
// rest with their step ID (after Config.BackgroundDelay, during which it may
// still start them itself as slots free up), schedules the soonest timer as a
// delayed continuation (sent a little early, see scheduleTimer, so that it has
// loaded the run when the timer comes due and lingers in process until then),
// completes or fails the run, and re-enqueues itself before the time budget
// (the context deadline minus a margin) runs out. Side effects follow
// committed state: messages are enqueued, streams closed and parent runs
// notified only after the event that justifies them has committed.
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
// cold start and never again. Inline steps run as goroutines, except a step
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
// encoded input that step_created records (world.DigestInput; logs written
// without one compare names only); a mismatch holds the run with
// REPLAY_DIVERGENCE naming both sides (run_held, see hold.go): nothing more
// runs for it, and it is replayed again with backoff or on request
// (RetryHeldRun), so that deploying code that replays its log resumes it,
// until then it can be cancelled or failed (FailRun). Completions are applied in log order,
// so Race-style selections follow the log.
package engine
