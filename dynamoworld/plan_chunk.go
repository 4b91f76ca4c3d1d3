package dynamoworld

import (
	"fmt"

	"github.com/skeinflow/skein/world"
)

// chunk finishes a plan's transaction: it moves payloads to S3 where an
// item or the transaction would be too large (the claim check: the items
// then hold the keys, and plan.uploads the bytes), turns each changed
// entity into an update of what changed, makes one write an item, and
// keeps the transaction within maxTransactionItems. Deletions of a run's
// end that do not fit follow the transaction (plan.overflow); anything
// else that does not fit refuses the commit (world.ErrInvalid: AppendFits
// tells the engine how many events one Append takes).
func chunk(pl *plan, ws *writes, cc *claimCheck) error {
	encs := make([]*encItem, 0, len(ws.puts)+len(ws.diffs))
	for _, o := range append(ws.puts, ws.ops...) {
		if o.kind == opPut {
			encs = append(encs, o.enc)
		}
	}
	for _, d := range ws.diffs {
		encs = append(encs, d.final)
	}
	markEntities(pl.runID, pl.prev+int64(len(pl.events)), encs)
	offload, err := cc.offloadPlan(encs, maxTransactionBytes)
	if err != nil {
		return err
	}
	pl.uploads = cc.apply(pl.runID, encs, offload)
	for k, b := range ws.uploads {
		pl.uploads[k] = b
	}
	var all []*op
	for _, d := range ws.diffs {
		// The item as stored: its large payloads are keys, as in final.
		bp, err := cc.offloadPlan([]*encItem{d.base}, 0)
		if err != nil {
			return err
		}
		cc.apply(pl.runID, []*encItem{d.base}, bp)
		u := diffUpdate(d.base.it, d.final.it)
		if u.empty() {
			continue
		}
		k, cond := itemKey{getS(d.final.it, attrPK), getS(d.final.it, attrSK)}, d.cond
		if isEntity(pl.runID, k) {
			cond = notAhead(pl.prev, cond)
		}
		all = append(all, &op{key: k, kind: opUpdate, tag: d.tag, upd: u, cond: cond})
	}
	all = append(all, ws.puts...)
	all = mergeOps(append(all, ws.ops...))
	var core, cleanup []*op
	for _, o := range all {
		if o.kind == opDelete && pl.endsRun && o.tag == tagOther && isCleanup(o.key) {
			cleanup = append(cleanup, o)
		} else {
			core = append(core, o)
		}
	}
	if len(core) > maxTransactionItems {
		return fmt.Errorf("%w: a commit of %d events to run %s writes %d items; DynamoDB allows %d in one transaction", world.ErrInvalid, len(pl.events), pl.runID, len(core), maxTransactionItems)
	}
	room := maxTransactionItems - len(core)
	if len(cleanup) > room {
		pl.overflow = cleanup[room:]
		cleanup = cleanup[:room]
	}
	pl.ops = append(core, cleanup...)
	return nil
}
