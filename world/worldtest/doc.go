// Package worldtest is the conformance suite every world.World passes.
//
// A World's own test calls Run with a constructor of fresh, isolated Worlds:
//
//	func TestConformance(t *testing.T) {
//		worldtest.Run(t, worldtest.Options{
//			New: func(t *testing.T) worldtest.Subject {
//				w, err := localworld.Open(localworld.Config{}) // in memory: whatever builds an empty World
//				if err != nil {
//					t.Fatal(err)
//				}
//				return worldtest.Subject{World: w, Consumer: w}
//			},
//		})
//	}
//
// Run runs one subtest per group (runs, holds, steps, hooks, waits, commit,
// reads, pagination, races, leases, queue, streams, patches, watch,
// attributes, rest, compensation, limits) and in
// it one parallel subtest per case; every case gets its own World from
// Options.New and the suite closes it when the case ends. New must
// therefore return an empty World that shares no state with the others
// (its own file, table prefix or queue), and must not close it itself.
//
// # What a World must do
//
// The state machine's rules (world.Apply) are checked through Storage.Append,
// never by calling Apply: every transition and every refusal, with the typed
// error (*world.RefusalError: its Kind, and the fields that tell a run that
// exists, a step leased or not yet due and a held run lease apart) and the
// sentinels they match.
// Beyond Apply, a World must:
//
//   - commit every event of an Append atomically, each event seeing the effects
//     of the earlier ones, and report a refusal as a *world.RefusalError
//     naming the refused event by its Index (or a *world.LimitError), a
//     single-event commit included;
//   - stamp events with dense, 1-based sequence numbers and evnt_ IDs, even
//     under concurrent appends to one run;
//   - refuse hook_created as hook_conflict when another active hook, of any
//     run, holds the token, atomically with respect to concurrent claims;
//   - on a run's end, delete its hooks (freeing their tokens) and its waits
//     without writing events of its own;
//   - store a held run's world.RunHold with it, so that GetRun and ListRuns
//     (by status too) return it until run_started or the run's end clears it;
//   - page every listing with a cursor on every non-empty page, the last one
//     included, an empty cursor on an empty page, HasMore exact, and refuse a
//     malformed cursor or one from another listing (or another run's events)
//     with world.ErrInvalid;
//   - when it bounds its commits (world.AppendLimiter), accept every Append
//     of the events AppendFits allows, so that a wide commit (150 steps, 60
//     hooks, 100 waits, a mix ending the run) appended in fenced chunks of
//     world.AppendFits lands whole and in order; AppendFits answers 1 to
//     len(events), the same for the same events;
//   - store a step's compensation (world.Step.Compensation, from
//     step_created) and its progress through the comp_* events, and a
//     run's compensation flag and counts (world.Run.Compensate,
//     world.Run.Compensations), so that every read returns them; judge a
//     comp_* event on the step as stored, so that of two concurrent outcomes
//     of one compensation exactly one is recorded;
//   - report the world.Limits it enforces (a Limits() world.Limits method)
//     and judge every event with them (world.State.Limits); for the suite
//     to reach them, New configures small ones: MaxEvents 1,000 to 2,000,
//     MaxPayload 64 KiB to 1 MiB;
//   - validate stream names (world.ValidateStreamName) on write;
//   - deliver watches (its own world.Watcher, or Skein's polling
//     fallback over its reads): one run's events after a cursor in order,
//     each once, resumable from any delivered event's cursor (a cursor in
//     the middle of a commit included), filtered by type, ending after the
//     run's terminal event; every run's events after WatchCursor, each once
//     and in order per run, what a run records after its end included
//     (compensations, run_deactivated), and nothing of a run that ended
//     before it; ErrNotFound for an unknown run, ErrInvalid for
//     a cursor of another run or kind; a cancelled watch ends at once. The
//     run's log folds (world.FoldEvents) into the state the World stores;
//   - deliver queue messages no earlier than their delay, with Attempt 1 on
//     the first delivery and Attempt+1 and the same MessageID on each
//     redelivery. A backend whose delays or visibility timeouts have a coarse
//     granularity must round them up, and can scale the suite's windows with
//     Options.Slow.
//
// # Timing
//
// No case depends on how fast the machine is. Leases and retry times are
// judged on the World's clock, Subject.Clock (a Clock: the wall clock plus
// an offset the suite moves; every World of one Subject reads it, two
// processes' Worlds included): a lease or retry time a case means to pass
// is a minute long and the case moves the clock past it at once, one it
// means to hold is an hour long, so neither lapses while the machine is
// busy. A World without a Subject.Clock skips the cases that move it.
//
// Queue delays and visibility timeouts, watches and stream tails are real
// time (the World's timers, a backend's own clock), scaled by
// Options.Slow: a check that something happens no earlier than a delay
// measures from before the call, a wait for something owed is bounded
// generously (a message within its delay plus 15s, a watch's event within
// 20s) and ends as soon as it comes, and no case relies on a goroutine
// having started within a sleep: it waits for the sign that it has (a watch
// from the present, a tail from its end).
//
// Queue cases that need a Consumer are skipped when Subject.Consumer is nil;
// the Enqueue deduplication case runs without one. The wide-commit cases
// (commit/append_fits_*) are skipped when the World is not a
// world.AppendLimiter: a skip, never a pass.
package worldtest
