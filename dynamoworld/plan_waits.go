package dynamoworld

// planWaits decides the wait items a commit writes: a put on its absence
// for a new wait, an update for a changed one, a deletion at the run's end,
// and, for a wait the commit assumed absent and leaves absent, a check of
// that absence.
func planWaits(pl *plan, ws *writes) {
	for _, id := range sortedIDs(pl.waits) {
		c := pl.waits[id]
		switch {
		case c.final != nil && c.init == nil:
			ws.puts = append(ws.puts, putOp(encodeWait(c.final, pl.ttl), tagOther, "", notExists))
		case c.final != nil && c.changed():
			ws.diffs = append(ws.diffs, &diffPair{base: encodeWait(c.init, 0), final: encodeWait(c.final, pl.ttl)})
		case c.final == nil && c.init != nil:
			ws.ops = append(ws.ops, deleteOp(waitKey(pl.runID, id), nil))
		case c.final == nil && c.assumed:
			ws.ops = append(ws.ops, checkOp(waitKey(pl.runID, id), tagOther, "", notExists))
		}
	}
}
