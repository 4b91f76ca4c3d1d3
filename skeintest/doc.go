// Package skeintest helps test Skein workflows. Its test environment (New)
// runs workflows on an in-memory local world with a virtual clock, so that
// a 30-day sleep or a step retried with an hour's backoff ends in
// milliseconds, with helpers that wait for a run, resume its hooks, swap its
// steps for stubs and check its event log. Its replay checker
// (CheckHistory, CheckHistories, CheckWorld) replays recorded run histories
// against the code under test, to catch a change that would hold the runs
// in flight before it is deployed.
//
//	func TestFulfil(t *testing.T) {
//		env := skeintest.New(t, orders.Registry(),
//			skeintest.StubStep(orders.ChargeCard, fakeCharge)) // this env only
//		run, err := orders.Fulfil.Start(env.Context(), env.Client(), order)
//		if err != nil {
//			t.Fatal(err)
//		}
//		s := env.WaitSuspended(run.ID()) // the run waits for approval
//		env.ResumeHook(s.Token(), orders.Approval{Approved: true})
//		shipment, err := skeintest.Result(env, run) // sleeps and backoffs skip
//		...
//		env.ExpectStepAttempts(run.ID(), "charge-card", 2)
//	}
//
// # The environment
//
// New opens an in-memory localworld.World and runs a worker.Worker on it
// with the Registry given (a clone of it, with the stubs in place), until
// the test's cleanup stops both; every goroutine it started has ended when
// the cleanup returns. Workflows run exactly as they do on a developer's
// machine or on Lambda: the same engine replays the same event log. The
// client (Env.Client) starts runs and talks to them as in production.
//
// # Virtual time
//
// The world, the engine and the client read the environment's clock
// (Env.Now), which starts at the real time (WithStartTime to choose) and
// moves only when the environment says so. Everything that waits in a
// durable workflow waits in the queue: a sleep, a step's retry, a held run's
// next replay are messages not visible before their time. The environment
// is settled when its Worker handles no message and none is visible at the
// current time: nothing can happen until the clock moves or the test acts.
// Then, in automatic time (the default), the clock jumps to the next
// message's time, but only while the test waits for a run (Env.Wait,
// Result, WaitSuspended, WaitDeactivated): whatever the test does between two such calls
// (start runs, resume hooks, read the log) happens at one instant, and a
// hook racing a timeout can be resumed in time. A wait that is answered
// stops the clock where it was answered: WaitSuspended sees a run asleep
// before its sleep is skipped, Result sees the time the run ended. With
// WithManualTime the clock moves only when Env.Advance moves it, stopping at
// every timer on its way, so a run sleeping twice for an hour wakes twice
// during a 3-hour Advance.
//
// Run.Result, Run.WaitDeactivated and Client.Result from package workflow wait without telling
// the environment: the clock does not move for them (the environment logs
// a hint after a while). Wait with Result instead. A workflow that never
// stops setting timers (a loop that sleeps) keeps an automatic clock going
// for as long as the test waits for it.
//
// Steps run in real time: a step that sleeps for a second takes a second,
// and a step's StepOptions.Timeout counts real time. Only what the engine
// schedules is virtual. Workflow code sees the virtual
// time through Context.Now; a step's time.Now is the real time (its
// workflow.StepMetadata has when it started, in virtual time).
//
// # Waiting and checking
//
// Env.Wait and Result wait for a run's end; WaitSuspended waits until a run
// waits for a hook or a sleep and says which; Settle waits until nothing
// runs. Each gives up after a timeout in real time (WithTimeout, default
// DefaultTimeout) and fails the test with what the run is doing: its
// status, its unfinished steps and their next retry, its hooks and sleeps,
// or the divergence a held run reports. Env.Events returns the run's log
// as world.Event values; ExpectEvents, ExpectStepAttempts and ExpectStatus
// check it and print the log (FormatEvents) when it is not as expected.
//
// # Sagas
//
// A run that fails (or is cancelled) and asks for its completed steps to
// be compensated (workflow.Workflow.WithCompensateOnFailure,
// client.CancelCompensating) ends first and compensates after: Result
// returns the failure while the compensations run. Env.WaitDeactivated
// waits, moving the clock as Result does, until the run is at rest (its
// compensations have all ended, retries and their backoff included) and
// returns it, its Compensations counted; its timeout message names the
// compensations still under way. ExpectStepAttempts counts a step's
// attempts as a compensation (comp_started) with its calls' attempts;
// CompensationAttempts counts the former alone.
//
//	_, err := skeintest.Result(env, run)       // the run failed: *workflow.RunFailedError
//	r := env.WaitDeactivated(run.ID())         // the refund's retries skip ahead
//	if r.Compensations.Succeeded != 1 { ... }
//	env.ExpectStepAttempts(run.ID(), "refund", 3)
//
// # Stubs
//
// StubStep replaces a step's function for one environment: the Registry
// the test passes and the step value stay as they are, so tests running in
// parallel with other stubs, or none, do not see each other's. The stub
// keeps the step's name (what the log records) and its retry policy.
// StubWorkflow does the same for a workflow, a child run's in particular.
//
// # Recorded histories
//
// A deployment must replay the logs of the runs it inherits. CheckHistories
// replays history files (exported with `skein runs export`) against a
// Registry and fails the test for each run the new code would hold, naming
// where the code and the log part ways; CheckHistory and CheckWorld do the
// same for one reader and for the runs of a World. Nothing executes: the log
// supplies every result. A history needs the run's secret, from which its
// generated hook tokens and its child runs' tokens derive: one printed by
// `skein runs events` without -show-tokens lacks it, and the check of such
// a run is a *NoTokensError saying so, not a divergence.
package skeintest
