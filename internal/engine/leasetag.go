package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/skeinflow/skein/world"
)

// A message's lease holder and the message's other deliveries.
//
// A delivery that finds the run lease held is acknowledged, leaving the run
// to the holder (wakeAfterStep, continueRetry): should the holder die, its
// own message, not yet acknowledged, comes back and takes the run on. That
// holds only while the holder's message is a different one. The queue may
// deliver the same message twice (a duplicate, or a redelivery after its
// visibility timeout ran out while the first delivery was still at work or
// had died): the second delivery finds the lease held by the first, and its
// acknowledgement deletes the very message the first relies on. So a lease
// taken for a message is owned under the message's tag, and a delivery that
// finds the lease held under its own tag sends a continuation for just
// after the lease's expiry (coverHolder) before it is acknowledged.

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

// coverHolder is what a delivery of the message tagged tag does when it
// finds the run lease held (held, a *world.LeaseHeldError) and is about to
// be acknowledged. When the holder took the lease under the same message,
// it enqueues a continuation for just after the lease's expiry (keyCover):
// if the holder has died, that continuation takes the run on; if it lives,
// the continuation bounces until it has released the lease, then finds
// nothing or goes on. Any other holder has its own message to come back
// should it die: nothing is sent, so the common case costs no message.
func (e *Engine) coverHolder(ctx context.Context, runID, tag string, held error) error {
	var lh *world.LeaseHeldError
	if tag == "" || !errors.As(held, &lh) || ownerTag(lh.Owner) != tag {
		return nil
	}
	e.log.Debug("engine: run lease held under the same message; continuing at its expiry", "run", runID, "owner", lh.Owner, "expires", lh.ExpiresAt)
	m := world.Message{RunID: runID, NotBefore: lh.ExpiresAt.Add(expirySlack)}
	return e.enqueue(ctx, m, keyCover(runID, lh.ExpiresAt))
}
