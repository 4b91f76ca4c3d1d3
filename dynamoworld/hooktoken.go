package dynamoworld

import (
	"context"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// A token is found through its index item (t#<sha256(token)>, a copy of
// the hook holding it). Every item holding a token binds it, with the
// hook's run and ID, to the item's key (itemsum.HookSum, checked by every
// read: checksum.go), so an index item edited to name another hook, or a
// hook item edited to hold another token, is world.ErrCorrupt. Each lookup
// also checks that what it lands on holds the token it was looked up by:
// GetHookByToken the index item's token, a hook_received (which carries
// the token) the run's hook item as its commit reads it (world.Apply), and
// a hook_conflict's holder the index item its commit was refused on.

// checkTokenItem checks that a token's index item (read, verified) holds
// the token it was read by.
func (w *store) checkTokenItem(it item, token string) error {
	if getS(it, aToken) != token {
		return w.otherToken(tokenKey(token), getS(it, aRun), getS(it, aHookID))
	}
	return nil
}

// otherToken is the world.ErrCorrupt of a token's index item (k) that
// holds another token, naming hook hid of run.
func (w *store) otherToken(k itemKey, run, hid string) error {
	return fmt.Errorf("%w: DynamoDB table %s: item %s, the index of a token, holds another token (naming run %s, hook %s): the item was edited or copied from another token's",
		world.ErrCorrupt, w.cfg.Table, k, run, hid)
}

// checkMissingHooks tells a hook item deleted behind the World from a hook
// disposed of, for the hook_received events of a commit planned on a fresh
// read (snap): a live run's hook whose item is missing while its token's
// index item still names it (a disposal deletes both in one transaction)
// is world.ErrCorrupt naming the table, run and hook; otherwise the hook
// is gone and world.Apply answers as before. It costs one read per such
// event, only when the hook's item is missing.
func (w *store) checkMissingHooks(ctx context.Context, runID string, snap *snapshot, events []world.EventInput) error {
	if snap.run == nil || snap.run.Status.Terminal() {
		return nil // a finished run's hooks are legitimately gone
	}
	for _, in := range events {
		d, ok := in.Data.(*world.HookReceived)
		if !ok || d.Token == "" {
			continue
		}
		if h, known := snap.hooks[in.CorrelationID]; !known || h != nil {
			continue
		}
		it, err := w.getItem(ctx, tokenKey(d.Token))
		if err != nil || it == nil {
			return err
		}
		if getS(it, aRun) == runID && getS(it, aHookID) == in.CorrelationID {
			if err := w.checkTokenItem(it, d.Token); err != nil {
				return err
			}
			return fmt.Errorf("%w: DynamoDB table %s: run %s (%s): the item of hook %s (%s) is missing, though its token's index item (%s) and its run say the hook is active: the item was deleted",
				world.ErrCorrupt, w.cfg.Table, runID, snap.run.Status, in.CorrelationID, hookLinkKey(runID, in.CorrelationID), keyOf(it))
		}
	}
	return nil
}
