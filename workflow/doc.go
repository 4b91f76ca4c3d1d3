// Package workflow is what workflow code imports: Skein's SDK for durable,
// event-sourced workflows in plain Go. Package client starts, steers and
// reads runs; package worker hosts them (Worker, Processor, schedules,
// webhooks). The three are thin: their types are aliases of
// internal/sdk's, whose comments are the full reference; each alias's
// comment here lists its methods.
//
// A workflow is deterministic Go that calls steps, sleeps and waits for
// hooks; it survives crashes and redeploys because every step result, timer
// and payload is recorded in the run's event log and the workflow is
// replayed from it. Steps are ordinary functions, run once per attempt and
// retried on error.
//
// # Steps and workflows
//
//	var charge = workflow.NewStep("charge-card", func(ctx context.Context, o Order) (Receipt, error) {
//		return payments.Charge(ctx, o) // return workflow.Fatal(err) to stop retrying
//	})
//
//	var fulfil = workflow.New("fulfil-order", func(ctx workflow.Context, o Order) (Shipment, error) {
//		receipt, err := charge.Call(ctx, o) // call and wait
//		if err != nil {
//			return Shipment{}, err
//		}
//		labels := make([]workflow.Future[Label], len(o.Items)) // fan out
//		for i, item := range o.Items {
//			labels[i] = printLabel.Go(ctx, item)
//		}
//		if _, err := workflow.All(ctx, labels...); err != nil {
//			return Shipment{}, err
//		}
//		if err := workflow.Sleep(ctx, 24*time.Hour); err != nil { // costs nothing while it sleeps
//			return Shipment{}, err
//		}
//		return ship.Call(ctx, receipt)
//	})
//
// Workflows and steps are registered explicitly, by name, in a Registry; a
// Worker (locally) or a Lambda handler runs them; a Client starts runs and
// talks to them:
//
//	reg := workflow.NewRegistry()
//	err := reg.Register(fulfil, charge, printLabel, ship)
//	worker, err := worker.New(worker.Config{World: w, Registry: reg})
//	go worker.Run(ctx)
//	run, err := fulfil.Start(ctx, worker.Client(), order, client.WithIdempotencyKey("order-42"))
//	shipment, err := run.Result(ctx)
//
// # Determinism
//
// Workflow code is replayed, so it must make the same calls in the same
// order every time: use Context.Now, Context.Rand and Context.NewID instead
// of time.Now and math/rand, do I/O only in steps, and do not call workflow
// functions from goroutines you start. Replay compares every recorded step,
// hook and timer with what the code asks for, by position, kind and name,
// and a step (a child run's start too) also by a digest of its encoded
// arguments, so that ranging over a map, whose order changes from one
// replay to the next, is caught rather than handing one call another's
// result. A mismatch does not fail the run: it holds it (world.RunStatusHeld,
// REPLAY_DIVERGENCE, the divergence in client.RunInfo.Hold) and nothing more runs
// for it; the worker replays it again with backoff, and at once on
// client.Client.RetryRun, so that deploying code that fits its log resumes it.
// A worker keeps a waiting run's workflow alive between its messages
// (worker.EngineOptions.LogCacheBytes) and hands it only what is new, so the code
// replays when another process takes the run on (a restart, a deploy, a
// second worker), not at every wake-up: check recorded histories against
// new code with skeintest's replay checker before deploying it.
// A step the code calls that the worker's Registry does not hold (a deploy
// that forgot to register it) holds the run the same way, with
// DEPLOYMENT_MISMATCH, before the step is created or started: registering
// it and deploying resumes the run.
// client.Client.FailRun and client.Client.Cancel end a held run for good.
//
// # Changing workflows
//
// Runs outlive deployments. To change what a workflow does under runs in
// flight, guard the change with a patch:
//
//	if workflow.Patched(ctx, "add-fraud-check") {
//		// new path: steps added, removed or reordered here replay exactly
//	} else {
//		// old path, as the code was before
//	}
//
// A run that reaches the call for the first time takes the new path and
// records the patch's marker with the next step, hook or timer it creates;
// a run whose log already went past that point without the marker takes
// the old path; a run replaying its marker takes the new one. When
// client.Client.CheckPatch (skein patches check) reports that no unfinished run
// lacks the marker, delete the old path and call Deprecate in place of
// Patched; once no deployment that still calls Patched can replay a run,
// remove the call. docs/changing-workflows.md walks through an example.
//
// Whether a change needs a patch, the logs of the runs in flight tell:
// a replay check (skein runs check, package skeintest) replays one run's recorded events against the
// registry's code, as a worker would, executing nothing, and reports the
// first divergence or where the code stands where the log ends. Package
// skeintest checks history files exported with skein runs export in a
// test (CheckHistories), or the runs of a World (CheckWorld).
//
// The other way is to pin runs to the code that started them. Every run
// records the version of that code (client.RunInfo.Version): client.Config.Version,
// or worker.Config.Version for the child runs a
// worker starts, by default the VCS revision the program was built from. A Worker or Processor given Versions (a Versions list or
// any worker.VersionFilter) executes only the runs whose version it accepts: the
// messages of any other run go back to the queue for an executor that
// does, without counting as failed deliveries, and a warning names the
// version. Run the old deployment, pinned to its version, beside the new
// one until no run of its version is left unfinished (skein runs list
// -version), then retire it.
//
// The workflow API (steps, sleeps, hooks, a future's Get, All, Select)
// belongs to the workflow function's own goroutine: to run steps at the
// same time, start them with Step.Go and wait with All or Select. A call
// from a goroutine the workflow started ends that goroutine
// (runtime.Goexit, so its deferred calls run) and fails the run with
// WORKFLOW_API_MISUSE, naming the call; other runs and the process are
// unaffected. A call made after the run has ended (from a goroutine still
// running when the workflow function returned, say) changes nothing: the
// run keeps its outcome, the goroutine ends the same way, and the worker
// logs a warning naming the call and WORKFLOW_API_MISUSE.
//
// Workflow code waits only through the workflow API. Code that blocks its
// goroutine on anything else (a channel, a mutex, time.Sleep, a long loop)
// cannot be interrupted: the worker stops waiting for it rather than hang.
// If a goroutine it started misused the API meanwhile, the run fails with
// WORKFLOW_API_MISUSE at once; if it blocks for longer than
// worker.EngineOptions.MaxSlice (default 30s), the run fails with REPLAY_TIMEOUT;
// if the worker's context ends while it blocks, worker.Worker.Run returns after a
// second's grace and the run stays as it was, for the next worker. In each
// case the blocked goroutine is abandoned (logged), never waited for.
//
// # Futures
//
// Step.Go, Workflow.Go (a child run), NewTimer and Hook.Next return a
// Future. All waits for every future (failing fast), Race for the first to
// settle, Any for the first success, Select for the first of futures of
// different types. "First" is the first in the log, so it is the same on
// replay.
//
// # Errors and retries
//
// A step's error is retried with exponential backoff and jitter, up to
// StepOptions.MaxRetries (default 3) retries; Fatal stops retries,
// RetryAfter and RetryAt choose the next attempt's time, and a
// SerializationError (arguments or result that do not encode as JSON) is
// never retried. An attempt cut short by the loss of its worker (the process
// killed or crashed, or a Lambda invocation timed out, before the outcome was
// recorded) is not a failure: it runs again as the same attempt once its
// lease expires, without using a retry, up to worker.EngineOptions.MaxInterruptions
// times (default 10); past that the step fails with an error whose Code is
// STEP_EXECUTOR_LOST. StepOptions.Timeout bounds each attempt: past it the
// step's context is cancelled and the attempt fails with a
// timeout error (code STEP_TIMEOUT; errors.Is context.DeadlineExceeded),
// retried like any failure, even if the function then returns a result (it
// is discarded). A step that fails for good gives the workflow a
// *StepError wrapping the step's error, typed again after its trip through the log
// (register your own types with Registry.RegisterError). A sentinel value
// (var ErrOutOfStock = errors.New(...)) comes back with its message but is
// no longer the same value, so errors.Is does not match it, even in the
// execution that ran the step: register each sentinel a workflow or client
// tests with errors.Is with Registry.RegisterSentinel, and an error that is
// or wraps it (Fatal(fmt.Errorf("reserve: %w", ErrOutOfStock))) is read
// back wrapping the very same value. RegisterError refuses a type whose
// JSON keeps nothing (errors.New's, fmt.Errorf's). An error wrapping
// several (errors.Join, fmt.Errorf with more than one %w) keeps each member
// typed: a workflow that returns Compensate's error (wrapped or not)
// fails with an error in which errors.As finds each *CompensationError at
// the client. A run that fails
// gives its client a *RunFailedError with the run's error code: USER_ERROR
// (the workflow returned an error or panicked), STEP_EXECUTOR_LOST (the
// error it returned is, or wraps, such a step's), STEP_TIMEOUT (likewise, a
// step whose last attempt timed out), RUNTIME_ERROR (the workflow
// is not registered), WORKFLOW_API_MISUSE (see Determinism),
// REPLAY_DIVERGENCE or DEPLOYMENT_MISMATCH (a held run failed with
// client.Client.FailRun), HOOK_PAYLOAD_INVALID (a hook payload that did not
// decode, returned unhandled), LIMIT_EXCEEDED or MAX_EVENTS_EXCEEDED (the
// run outgrew its Limits) or MAX_DELIVERIES_EXCEEDED. A panic in workflow or step code fails the run or
// the attempt, never the process; a panic in a goroutine that code starts is
// beyond any recovery, as in any Go program.
//
// # Compensation (sagas)
//
// WithCompensation declares a step's undo: a step that takes a
// Compensation, the original step's input and result (a refund for a
// charge). Register refuses a step whose compensation is not registered
// with it (a *RegistrationError, Problem
// RegistrationUnregisteredCompensation). Every call of the step
// records the name of its compensation with it, so the log says what
// undoes what. A compensation is not a step of the run: its attempts are
// recorded on the step it undoes (comp_started, comp_retry_scheduled,
// comp_succeeded, comp_failed), with the compensation step's retry policy
// and timeout, and the step ends compensated or compensation_failed. Each
// is recorded exactly once, even across crashes and redeliveries: a
// compensation whose process dies is taken over by another once its lease
// expires (its function may then run twice, as a step's may).
//
// Compensate, called from the workflow, compensates the steps the run has
// completed so far, most recently completed first, one after the other;
// then the workflow goes on (catch a failure, compensate, return a result
// or an error). Replay takes the compensations' outcomes from the log.
// Each completed step is compensated at most once however often
// Compensate is called; failed steps, and steps still running, are not (a
// later Compensate covers the latter once they complete), so in a fan-out
// only the completed branches are. A compensation that fails for good does
// not stop the others, and Compensate returns it as a *CompensationError.
//
// Workflow.WithCompensateOnFailure compensates a run whose function
// returns an error (or panics) after its end: the failure is recorded at
// once, and Result returns it while the compensations run; then every
// completed step not compensated yet is, most recently completed first,
// including the steps the run left running that complete after the end;
// then the run comes to rest (WaitDeactivated). client.Client.Cancel with
// CancelCompensating does the same for a cancelled run, and client.Client.FailRun
// for a run failed by hand: with FailCompensating, or by default when the
// client's Registry defines the run's workflow WithCompensateOnFailure
// (FailWithoutCompensating declines). A step still running when a
// compensating cancellation arrives sees its context cancelled: if it then
// returns an error it is recorded failed (RunCancelledError) and not
// compensated, even if its side effect happened; a compensation
// that outlives its Timeout is recorded failed even if it goes on and does
// its work, so keep compensations idempotent. client.RunInfo.
// Compensations counts them and names those that failed for good (status
// compensation_failed); the run's outcome stays what the workflow or the
// cancellation made it.
//
// # Hooks, webhooks and streams
//
// NewHook creates a hook that receives payloads sent to its token with
// client.Client.ResumeHook, in order (a payload that does not decode as the hook's
// type is a *SerializationError, its HookID set, which the workflow can
// handle; unhandled, the run fails with HOOK_PAYLOAD_INVALID); NewWebhook
// one resumed by HTTP requests (POST, PUT or PATCH) to
// worker.WebhookHandler. A hook or webhook receives
// every payload sent while it is active, not only the first, until the
// workflow disposes of it or the run ends. A generated token is derived
// from a secret the run draws at creation, so knowing a run ID does not
// give its tokens. Steps write a run's output streams with Writer;
// clients read them live with client.Client.ReadStream.
//
// # Child runs and cancellation
//
// Workflow.Call and Workflow.Go start a child run from a workflow and wait
// for it (the parent waits on a hook the child resumes when it ends, under
// a token of the engine's own; once the outcome is recorded the parent
// disposes of it, so it no longer counts among the run's active hooks, and
// a replay divergence on it names the child's workflow);
// Workflow.Start does from a step. client.Client.Cancel ends a run: its pending
// steps are refused, its running steps see their context cancelled, and its
// unfinished child runs (Workflow.Call, Workflow.Go) are cancelled in turn.
//
// # The end of a run and its rest
//
// A run's outcome is recorded as soon as it is known, and Result returns
// it then; no new step starts after it. A step the run had started and not
// awaited keeps running when the run completes or fails, and records its
// result after the end (past the run's MaxRunBytes, a result or error
// larger than world.LateOutcomeSlack, 1 KiB, is recorded as the step's
// failure with LIMIT_EXCEEDED instead; a step's result that would take a
// live run past it fails the run with LIMIT_EXCEEDED, awaited or not, run
// inline or in the background); once nothing of the run runs any more (its
// compensations included), run_deactivated marks it at rest (client.RunInfo.DeactivatedAt), which
// client.Client.WaitDeactivated waits for. Workflow.WithCleanup gives a workflow a
// hook that runs once per completed run (at least once across crashes,
// never for a failed or cancelled run), after its outcome is durably
// recorded and before Result returns or a parent wakes; its failure is
// recorded and logged (client.Client.CleanupErr returns it as a *client.CleanupError)
// and leaves the run completed.
//
// # Watching runs
//
// client.Client.Subscribe follows runs as they commit: one run's events (or every
// run's), filtered by type, optionally after a snapshot of the run as it
// stands (its steps, active hooks and waits, a snapshot), each update
// with a cursor to resume from after a disconnect, with nothing missed and
// nothing twice:
//
//	sub, err := c.Subscribe(ctx, client.SubscribeOptions{RunID: id, Snapshot: true})
//	defer sub.Close()
//	for u, err := range sub.All() { // ends once the run is at rest (run_deactivated)
//		...
//	}
//
// On the local world updates are pushed at every commit; on dynamoworld
// the run's partition is polled; on any other World the Client polls its
// read API. Package skeinhttp serves subscriptions as Server-Sent Events.
//
// # Schedules
//
// worker.Config.Schedules starts runs on a cron schedule or at a fixed rate
// (package schedule has the syntax): each firing starts one run keyed by
// the schedule's name and the scheduled time, so workers sharing a store
// start it once. On Lambda an EventBridge Scheduler schedule sends a
// schedule message to the queue instead, which worker.Processor.Process turns into
// the same run start.
//
// # Run attributes
//
// A run carries up to 16 string attributes (a key of 1 to 64 characters of
// A-Z a-z 0-9 _ . : -, a value of 1 to 256 bytes of text) to be found by:
// client.WithAttributes at start, SetAttributes from the workflow, and
// client.Client.SetAttributes from anywhere, in any run status. Each merges its
// keys into the run's; client.Client.ListRuns filters by one
// (client.ListRunsOptions.Attribute), with the workflow and status filters:
//
//	err := workflow.SetAttributes(ctx, map[string]string{"customer": o.CustomerID})
//	page, err := c.ListRuns(ctx, client.ListRunsOptions{
//		Attribute: &world.AttributeFilter{Key: "customer", Value: "c-42"},
//	})
//
// SetAttributes is recorded (an attribute_set event) at the workflow's next
// suspension, or with the run's end, and replay matches it at its position
// by its keys, as it does a step by its name. Out-of-bounds attributes, or
// a 17th key, are refused where they are set, with an error matching
// world.ErrInvalid, and nothing is recorded.
package workflow
