package dynamoworld

import "github.com/skeinflow/skein/internal/itemsum"

// planRun writes the commit item and the run's own items. The commit holds
// every event of the commit, keyed by the run's last sequence number before
// it: attribute_not_exists on that key is the fence, since every commit
// after the snapshot was keyed by the snapshot's last sequence number. It
// also carries the run's status (rs), its counts of active hooks and waits
// (nh, nw), its count of steps (ns, when the snapshot knows it) and its
// lazy steps (u) after the commit. The run head changes with the status
// only, the body at creation and at the end.
func planRun(pl *plan, ws *writes, cc *claimCheck) error {
	commit, eventData, err := encodeCommit(cc, pl.runID, pl.prev, pl.events, pl.lazy, pl.ttl)
	if err != nil {
		return err
	}
	setS(commit.it, aRunStatus, string(pl.run.Status))
	encodeRest(commit.it, pl.run)
	if pl.nHooks, pl.nWaits, err = pl.counts(); err != nil {
		return err
	}
	setCounts(commit.it, pl.nHooks, pl.nWaits)
	if pl.nSteps = -1; pl.snap.nSteps >= 0 {
		pl.nSteps = pl.snap.nSteps + len(pl.newSteps())
	}
	setStepCount(commit.it, pl.nSteps)
	setBareMade(commit.it, pl.madeBare)
	ws.uploads = eventData
	ws.puts = append(ws.puts, putOp(commit, tagFence, "", fenceCond))
	if pl.created {
		return planRunCreated(pl, ws)
	}
	d := &diffPair{base: encodeRunHead(pl.prevRun, 0), final: encodeRunHead(pl.run, pl.ttl)}
	if pl.endsRun && pl.snap.streams == streamsNone {
		// The run's end checks the belief that the run has no stream, so
		// that ListStreams can answer from the cache (streams.go).
		d.cond = func(e *expr) string { return e.n(aStreams) + " = " + e.v(num(0)) }
		pl.streamsChecked = true
	}
	ws.diffs = append(ws.diffs, d)
	if pl.endsRun || pl.ttl > 0 {
		base, err := encodeRunBody(pl.prevRun, 0)
		if err != nil {
			return err
		}
		final, err := encodeRunBody(pl.run, pl.ttl)
		if err != nil {
			return err
		}
		ws.diffs = append(ws.diffs, &diffPair{base: base, final: final})
	}
	return nil
}

// fenceCond is the commit item's condition: its key is free.
func fenceCond(e *expr) string { return "attribute_not_exists(" + e.n(attrSK) + ")" }

// planRunCreated writes a new run's head (with no stream yet: os = 0; like
// every item it carries the checksum mark, which on the head says that the
// run's items all carry checksums: checksum.go), its body and its
// idempotency key, each on its absence. The head also says that the run's
// hook items carry their checksum (itemsum.HookMark).
func planRunCreated(pl *plan, ws *writes) error {
	head := encodeRunHead(pl.run, pl.ttl)
	setN(head.it, aStreams, 0)
	setN(head.it, itemsum.HookMark, 1) // its hook items all carry itemsum.HookSum
	pl.streamsChecked = true
	ws.puts = append(ws.puts, putOp(head, tagHead, "", notExists))
	body, err := encodeRunBody(pl.run, pl.ttl)
	if err != nil {
		return err
	}
	ws.puts = append(ws.puts, putOp(body, tagOther, "", notExists))
	if pl.idemKey != "" {
		e := newEncItem(idemKey(pl.idemKey))
		setS(e.it, aRun, pl.runID)
		setS(e.it, aIdemKey, pl.idemKey)
		if pl.ttl > 0 {
			setN(e.it, attrTTL, pl.ttl)
		}
		ws.puts = append(ws.puts, putOp(e, tagIdem, "", notExists))
	}
	return nil
}
