package engine

import "time"

// The engine's fixed durations, each with why it is what it is. What a
// deployment may want to tune is in Config; these are the engine's own
// margins, argued once here.
const (
	// cleanupTimeout bounds the World calls a session makes after its
	// context may be done (releasing the run lease, the read after the
	// release, see session.afterRelease): they must run even when the
	// invocation was cut off, but not hang it for long. A release that
	// times out leaves the lease to expire, which the session plans for.
	cleanupTimeout = 5 * time.Second

	// sideEffectTimeout bounds the side effects of a run's end (closing
	// its streams, notifying a parent) and the recording of a misuse
	// failure from a foreign goroutine, which run detached from any
	// invocation's context: they are idempotent, and a continuation runs
	// them again if they did not finish.
	sideEffectTimeout = 10 * time.Second

	// expirySlack is added to a lease's expiry before a message is sent
	// for it (a bounced continuation, a queued step whose lease is held, a
	// run lease that could not be released): the receiver then finds the
	// lease expired rather than a millisecond short of it, which would
	// cost it another bounce.
	expirySlack = 10 * time.Millisecond

	// leaseCheckSlack is added to the expiry of another invocation's
	// inline step lease to make the timer that checks on it (see
	// schedule.next): a live holder renews its lease ahead of expiry, so
	// a check right at the old expiry would usually find it renewed.
	leaseCheckSlack = 50 * time.Millisecond

	// maxEarlyWait is how early a message may arrive and still be handled
	// in process, sleeping until its NotBefore; earlier, it hops (is
	// enqueued again for the rest), so that an invocation does not sleep
	// away its time.
	maxEarlyWait = 50 * time.Millisecond

	// maxWakeLead bounds how early a timer's continuation is sent
	// (wakeLead).
	maxWakeLead = 20 * time.Millisecond

	// stepTimeoutGrace is how long an attempt past its timeout may take to
	// return after its context was cancelled before the engine stops
	// waiting for it, records the timeout and leaves the function running
	// on its own.
	stepTimeoutGrace = time.Second

	// recordBackoff is the pause between attempts of stepRunner.record, times
	// the attempt number: a short backoff from transient World errors.
	recordBackoff = 20 * time.Millisecond

	// leaseCheckRound is what a safety-net lease check is rounded up to
	// (scheduleLeaseCheck), so that checks of one run for leases expiring
	// in the same round share one message.
	leaseCheckRound = time.Second
)
