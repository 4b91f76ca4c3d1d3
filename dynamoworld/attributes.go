package dynamoworld

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/skeinflow/skein/world"
)

// Run attributes. The run's attributes live in its body (the run as
// GetRun reads it); every attribute also has an item of its own in the
// run's partition, for the index gs4:
//
//	pk  r#<runID>         sk  a#<key>
//	g4  at#<key>=<value>  gsk the run's (creation time, run ID)
//
// Keys are of [A-Za-z0-9_.:-], so "=" ends the key. The commit that sets
// an attribute (run_created, attribute_set) puts its item in the same
// transaction, over the item of the key's previous value; a run's end
// gives them the run's ttl like every item of its partition (expireRun).
// ListRuns by attribute queries gs4 (keys only) newest first, reads the
// runs the items name and keeps those that still match every filter.

const (
	attrG4    = "g4"  // GSI "gs4" partition: "at#<key>=<value>"
	indexAttr = "gs4" // runs by attribute
	prefAttr  = "a#"  // a run's attribute item
)

func attrItemKey(runID, key string) itemKey { return itemKey{runPK(runID), prefAttr + key} }
func attrIndexKey(key, value string) string { return "at#" + key + "=" + value }

// planAttributes writes the item of every attribute the commit sets to a
// new value, and the run's body when only attributes changed it (the run's
// creation and end write the body anyway).
func planAttributes(pl *plan, ws *writes) error {
	var before map[string]string
	if pl.prevRun != nil {
		before = pl.prevRun.Attributes
	}
	changed := false
	for _, k := range sortedIDs(pl.run.Attributes) {
		v := pl.run.Attributes[k]
		if old, ok := before[k]; ok && old == v {
			continue
		}
		changed = true
		e := newEncItem(attrItemKey(pl.runID, k))
		e.it[attrG4] = str(attrIndexKey(k, v))
		e.it[attrGSK] = str(gsk(pl.run.CreatedAt, pl.runID))
		if pl.ttl > 0 {
			setN(e.it, attrTTL, pl.ttl)
		}
		ws.puts = append(ws.puts, putOp(e, tagOther, "", nil))
	}
	if !changed || pl.created || pl.endsRun || pl.ttl > 0 {
		return nil // planRun writes the body
	}
	base, err := encodeRunBody(pl.prevRun, 0)
	if err != nil {
		return err
	}
	final, err := encodeRunBody(pl.run, 0)
	if err != nil {
		return err
	}
	ws.diffs = append(ws.diffs, &diffPair{base: base, final: final})
	return nil
}

// attributeCost is what the attributes an event sets add to a commit: an
// item each, and their bytes in it and in the run's body.
func attributeCost(attrs map[string]string) (items, bytes int) {
	for k, v := range attrs {
		items++
		bytes += 2*len(k) + 2*len(v) + len(prefAttr) + len("at#=")
	}
	return items, bytes
}

// missingIndex turns DynamoDB's refusal of a Query on an index the table
// lacks into a *SchemaError naming it (Index). ListRuns by attribute meets
// it on a table without the index gs4 (a table created before run
// attributes were indexed); everything else works on such a table.
func (w *store) missingIndex(err error, index string) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(ae.ErrorMessage()), "index") {
		return &SchemaError{Table: w.cfg.Table, Index: index}
	}
	return err
}

// listRunsByAttribute lists the runs with p's attribute through gs4,
// newest first, applying the workflow and status filters to the runs read:
// it reads on until the page is full or the index has no more, so that
// HasMore says whether a next page has runs.
func (w *store) listRunsByAttribute(ctx context.Context, p *world.ListRunsParams) (*world.Page[world.Run], error) {
	f := p.Attribute
	if err := f.Check(); err != nil {
		return nil, err
	}
	after, err := decodePos(runsKind, p.Cursor, validGSK)
	if err != nil {
		return nil, err
	}
	limit := p.EffectiveLimit()
	var runs []world.Run
	var pos []string
	for len(runs) <= limit {
		q := pageQuery{index: indexAttr, pkAttr: attrG4, pk: attrIndexKey(f.Key, f.Value), skAttr: attrGSK,
			after: after, desc: true, limit: max(limit+1-len(runs), 10)}
		keys, more, err := w.query(ctx, q)
		if err != nil {
			return nil, w.missingIndex(err, indexAttr)
		}
		read, err := w.readRuns(ctx, keys)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			after = getS(k, attrGSK)
			r := read[i]
			if r == nil || !f.Matches(r) || (p.WorkflowName != "" && r.WorkflowName != p.WorkflowName) || (p.Status != "" && r.Status != p.Status) {
				continue
			}
			runs, pos = append(runs, *r), append(pos, after)
			if len(runs) > limit {
				break
			}
		}
		if !more {
			break
		}
	}
	more := len(runs) > limit
	if more {
		runs, pos = runs[:limit], pos[:limit]
	}
	last := ""
	if len(pos) > 0 {
		last = pos[len(pos)-1]
	}
	return finishPage(runs, more, runsKind, last), nil
}
