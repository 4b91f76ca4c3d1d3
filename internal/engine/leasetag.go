package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/skeinflow/skein/world"
)

// A message's lease holder and the message's other deliveries.
//
// A delivery that finds the run lease held is acknowledged, leaving the run
// to the holder (wakeAfterStep, continueRetry): should the holder die, its
// own message, not yet acknowledged, comes back and takes the run on. That
// holds only while the holder's message is still there. The queue may
// deliver the same message twice (a duplicate, or a redelivery after its
// visibility timeout ran out while the first delivery was still at work or
// had died): the second delivery finds the lease held by the first, and its
// acknowledgement deletes the very message the first relies on. So a lease
// taken for a message is owned under the message's tag, and a delivery that
// finds the lease held under its own tag sends a continuation for just
// after the lease's expiry (coverHolder) before it is acknowledged. So does
// a step delivery that found all its steps ended before it ran any (late):
// it is such a second delivery, or the step message a second delivery
// queued again while the first still ran the step (requeueRefusedStart),
// whose own message that second delivery has acknowledged. A delivery that
// ran steps itself, the common case, finds the lease held by a holder whose
// message is still there, and sends nothing.

// delivery is what wakeAfterStep knows of the message it handles.
type delivery struct {
	tag  string // the message's tag (msgTag)
	late bool   // every step it names had ended before it ran any
}

// ownerTagSep separates a lease owner's name from the tag of the message
// it was taken under. Engine IDs never contain it.
const ownerTagSep = "/"

// msgTag names a message as delivered: every delivery of it has the same
// tag, and two messages sent apart have different tags (each carries its
// RequestedAt). It is a digest of the message's encoding, short enough for
// a lease owner; a collision only costs a continuation. Lease owners carry
// it, so its format must stay stable across releases: an engine of one
// release must recognize a lease taken by another for the same message.
func msgTag(msg world.Message) string {
	b, err := world.EncodeMessage(msg)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// ownerTag returns the message tag a lease owner carries (empty for none).
func ownerTag(owner string) string {
	_, tag, _ := strings.Cut(owner, ownerTagSep)
	return tag
}

// coverHolder is what delivery d does when it finds the run lease held
// (held, a *world.RefusalError of world.ErrLeaseHeld) and is about to be
// acknowledged. When the
// holder took the lease under the same message, or d is late, it enqueues a
// continuation for just after the lease's expiry (keyCover): if the holder
// has died, that continuation takes the run on; if it lives, the
// continuation bounces until it has released the lease, then finds nothing
// or goes on. Otherwise the holder has its own message to come back should
// it die: nothing is sent, so the common case costs no message.
func (rl *runLeases) coverHolder(ctx context.Context, runID string, d delivery, held error) error {
	lh := refusalOf(held)
	if lh == nil || lh.Kind != world.ErrLeaseHeld || !d.late && (d.tag == "" || ownerTag(lh.Holder) != d.tag) {
		return nil
	}
	rl.log.Debug("engine: run lease held by a holder this delivery may have lost its message; continuing at its expiry", "run", runID, "owner", lh.Holder, "expires", lh.Until, "late", d.late)
	m := world.Message{RunID: runID, NotBefore: lh.Until.Add(expirySlack)}
	return rl.enqueue(ctx, m, keyCover(runID, lh.Until))
}
