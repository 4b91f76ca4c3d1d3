package engine

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skeinflow/skein/world"
)

// The idempotency keys of every message the engine enqueues are built here,
// and only here. A key is persisted (the World deduplicates messages by it
// for a window), so a format must never change: a continuation sent by the
// old code and one sent by the new for the same cause would no longer
// deduplicate. keys_test.go pins every format to a golden string.
//
// Each key starts with a word naming why the message was sent; the rest
// names what makes that cause unique, so that two sessions reacting to the
// same cause send one message between them, and different causes never
// share a key.

// StartKey is the key of the message that wakes a run its client has just
// created.
func StartKey(runID string) string { return "start:" + runID }

// CancelKey is the key of the message that wakes a run its client has
// cancelled, to run the side effects of its end.
func CancelKey(runID string) string { return "cancel:" + runID }

// keyFail wakes a run FailRun has failed, to run the side effects of its
// end.
func keyFail(runID string) string { return "fail:" + runID }

// keyMisuse wakes a run failed from a goroutine its workflow started
// (failForeign).
func keyMisuse(runID string) string { return "misuse:" + runID }

// keyHook wakes a run after a hook received a payload: one message per
// hook_received event.
func keyHook(eventID string) string { return "hook:" + eventID }

// keyAfter continues a run whose session ended and could not take the lease
// again (or ran out of budget) with events arrived after it: one message
// per last sequence number the session saw.
func keyAfter(runID string, lastSeq int64) string {
	return fmt.Sprintf("after:%s:%d", runID, lastSeq)
}

// keyUnreleased continues a run whose lease could not be released, at the
// lease's expiry (session.afterRelease).
func keyUnreleased(runID string, lastSeq int64) string {
	return fmt.Sprintf("unreleased:%s:%d", runID, lastSeq)
}

// keyCover continues a run, just after the run lease's expiry, whose lease
// is held under the message being delivered again (coverHolder): one
// message per expiry.
func keyCover(runID string, expires time.Time) string {
	return fmt.Sprintf("cover:%s:%d", runID, expires.UnixMilli())
}

// keyBudget continues a run whose invocation ran out of budget with steps
// ready to run.
func keyBudget(runID string, lastSeq int64) string {
	return fmt.Sprintf("budget:%s:%d", runID, lastSeq)
}

// keyBusy re-enqueues a continuation that found the run lease held
// (runLeases.bounce): bounces of one hold attempt and hop in the same delay
// window (bucket) share it.
func keyBusy(runID string, holdAttempt, hop int, bucket int64) string {
	return fmt.Sprintf("busy:%s:%d:%d:%d", runID, holdAttempt, hop, bucket)
}

// keyHop re-enqueues a message that arrived before its NotBefore, as its
// hop-th hop (Engine.hop).
func keyHop(msg world.Message, hop int) string {
	return fmt.Sprintf("hop:%s:%s:%d:%d:%d", msg.RunID, msg.StepID, len(msg.StepIDs), msg.NotBefore.UnixNano(), hop)
}

// keyTimer continues a run when its soonest timer comes due; early marks
// the continuation sent ahead of it to linger until then (scheduleTimer).
func keyTimer(runID string, at time.Time, early bool) string {
	if early {
		return fmt.Sprintf("timer:%s:%d:early", runID, at.UnixMilli())
	}
	return fmt.Sprintf("timer:%s:%d", runID, at.UnixMilli())
}

// keyLeaseCheck continues a run at the whole second sec when another
// invocation's inline step lease expires then (scheduleLeaseCheck).
func keyLeaseCheck(runID string, sec time.Time) string {
	return fmt.Sprintf("lease:%s:%d", runID, sec.Unix())
}

// keyHeld retries hold attempt of a held run at its scheduled time.
func keyHeld(runID string, attempt int) string {
	return fmt.Sprintf("held:%s:%d", runID, attempt)
}

// keyRetryHeld retries hold attempt of a held run now, on request
// (RetryHeldRun).
func keyRetryHeld(runID string, attempt int) string {
	return fmt.Sprintf("retry:%s:%d", runID, attempt)
}

// keyStep queues one step for a background executor: its attempt-th start,
// or its retry after attempt.
func keyStep(stepID string, attempt int) string {
	return fmt.Sprintf("step:%s:a%d", stepID, attempt)
}

// keySteps queues a group of n steps, stepID first, for a background
// executor (session.enqueueSteps).
func keySteps(stepID string, attempt, n int) string {
	return fmt.Sprintf("steps:%s:a%d:n%d", stepID, attempt, n)
}

// keyStepEarly queues a step again whose start was refused as not yet due.
func keyStepEarly(stepID string, retryAfter time.Time) string {
	return fmt.Sprintf("step:%s:early:%d", stepID, retryAfter.UnixMilli())
}

// keyStepLeased queues a step again whose start was refused while a queued
// attempt holds its lease, for the lease's expiry.
func keyStepLeased(stepID string, attempt int, expires time.Time) string {
	return fmt.Sprintf("step:%s:leased:a%d:%d", stepID, attempt, expires.UnixMilli())
}

// keyDone continues a run after a background step's attempt ended.
func keyDone(stepID string, attempt int) string {
	return fmt.Sprintf("done:%s:%d", stepID, attempt)
}

// keyUnregistered continues a run whose queued step a background executor
// did not start, its name not being registered (the run's session holds
// it, see unregistered.go): one message per attempt the step is at.
func keyUnregistered(stepID string, attempt int) string {
	return fmt.Sprintf("unregistered:%s:%d", stepID, attempt)
}

// keyDoneGroup continues a run after a background group of n steps ended,
// stepID's attempt last.
func keyDoneGroup(stepID string, attempt, n int) string {
	return fmt.Sprintf("done:%s:%d:n%d", stepID, attempt, n)
}

// keyRest continues a finished run whose steps still run, at the whole
// second at, to deactivate it should their executors be lost
// (scheduleRestCheck).
func keyRest(runID string, at time.Time) string {
	return fmt.Sprintf("rest:%s:%d", runID, at.Unix())
}

// keyComp continues a finished run at at to go on with the compensation
// of step stepID (empty: the next one): its retry's time, or just past its
// attempt's lease (scheduleCompCheck).
func keyComp(runID, stepID string, at time.Time) string {
	return fmt.Sprintf("comp:%s:%s:%d", runID, stepID, at.UnixMilli())
}

// keyResend sends again, as a new message, a message received too often
// (why: "replace" or "recount", Engine.replace and Engine.recount): one
// message per message received, named by its body's digest (two messages
// of one body are the same message), so that the old message received
// again once its replacement is sent is not sent a second time. A
// message that cannot be encoded has no key.
func keyResend(why string, msg world.Message) string {
	body, err := json.Marshal(msg)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(body)
	return fmt.Sprintf("%s:%s:%x", why, msg.RunID, sum[:16])
}
