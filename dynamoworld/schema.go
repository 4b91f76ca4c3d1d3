package dynamoworld

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// SchemaVersion is the version of the table format this World reads and
// writes (doc.go, Table). The table records its own in one item (pk
// "skein", sk "schema", attribute v), written by CreateTable, or by the
// first World that opens an empty table created otherwise (a template).
// New (CheckSchema) refuses a table of another version, and a table
// without the item that already holds runs. Version 2 added bare steps
// (steps whose state is only their events, bare.go), lazy steps' lease
// records and sharded index keys (shards.go): a version 1 table is moved to
// 2 in place (its runs are read as they are: they have no bare step and no
// lease record, and the listings also read the unsharded keys of a table
// so moved), after which Worlds of version 1 refuse it.
// There is no other migration between the formats of this pre-1.0 table.
const SchemaVersion = 2

const attrVersion = "v"

func schemaKey() itemKey { return itemKey{"skein", "schema"} }

// SchemaError is New's refusal of a table whose format is not this World's
// (Found, Want), or a read's refusal of a table without an index it needs
// (Index: ListRuns by attribute on a table without gs4).
type SchemaError struct {
	Table string
	// Found is the table's version; 0 when the table has no schema item
	// but holds runs (written by a World from before the version existed).
	Found int
	Want  int
	// Index is the global secondary index the table lacks; when it is
	// set, Found and Want are not.
	Index string
}

func (e *SchemaError) Error() string {
	if e.Index != "" {
		return fmt.Sprintf("dynamoworld: table %q has no index %q, which listing runs by attribute needs: add the GSI %s "+
			"(partition key %s, sort key %s, both strings; keys only) by deploying the current template.yaml or with UpdateTable",
			e.Table, e.Index, e.Index, attrG4, attrGSK)
	}
	found := fmt.Sprintf("version %d", e.Found)
	if e.Found == 0 {
		found = "runs but no schema version (written by an earlier dynamoworld)"
	}
	return fmt.Sprintf("dynamoworld: DynamoDB table %q holds %s; this World reads and writes version %d only, "+
		"and formats are not migrated before 1.0: create a new table (CreateTable, or the template's EventTable) and set Config.Table to it",
		e.Table, found, e.Want)
}

// CheckSchema is World.CheckSchema.
func (w *store) CheckSchema(ctx context.Context) error {
	v, found, err := w.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if !found {
		if err := w.claimSchema(ctx); err != nil {
			return err
		}
		if v, found, err = w.schemaVersion(ctx); err != nil {
			return err
		}
	}
	if found && v == 1 {
		if err := w.upgradeSchema(ctx, 1); err != nil {
			return err
		}
		if v, found, err = w.schemaVersion(ctx); err != nil {
			return err
		}
	}
	if !found || v != SchemaVersion {
		return &SchemaError{Table: w.cfg.Table, Found: v, Want: SchemaVersion}
	}
	return nil
}

// upgradeSchema moves the schema item from version from to SchemaVersion,
// on condition that it still says from (another World may have moved it).
func (w *store) upgradeSchema(ctx context.Context, from int) error {
	e := newExpr()
	set := e.n(attrVersion) + " = " + e.v(num(SchemaVersion)) + ", " + e.n(attrLegacy) + " = " + e.v(num(1))
	_, err := w.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: schemaKey().av(),
		UpdateExpression:         aws.String("SET " + set),
		ConditionExpression:      aws.String(e.n(attrVersion) + " = " + e.v(num(int64(from)))),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	})
	if _, failed := conditionFailed(err); err != nil && !failed {
		return ddbErr("UpdateItem", w.cfg.Table, err)
	}
	return nil
}

// schemaVersion reads the table's version; it also notes whether the
// table was moved from version 1 (attribute l), whose index keys are not
// sharded (shards.go).
func (w *store) schemaVersion(ctx context.Context) (v int, found bool, err error) {
	out, err := w.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.cfg.Table), Key: schemaKey().av(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, false, ddbErr("GetItem", w.cfg.Table, err)
	}
	if len(out.Item) == 0 {
		return 0, false, nil
	}
	w.legacyIndex = getN(out.Item, attrLegacy) == 1
	return int(getN(out.Item, attrVersion)), true, nil
}

// attrLegacy, on the schema item: the table was moved from version 1 and
// may hold unsharded index keys.
const attrLegacy = "l"

// claimSchema writes the schema item into a table that holds no run (one
// Query of the index of all runs); a table with runs is left as it is.
func (w *store) claimSchema(ctx context.Context) error {
	w.legacyIndex = true // a table without the item may be of any earlier code
	keys, _, err := w.queryShards(ctx, pageQuery{index: indexAll, pkAttr: attrG1, skAttr: attrGSK, limit: 1}, w.shardKeys(g1RunKey))
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	return putSchema(ctx, w.ddb, w.cfg.Table)
}

// putSchema writes the schema item on its absence (a present one is left
// as it is).
func putSchema(ctx context.Context, ddb DynamoDBAPI, table string) error {
	e := newExpr()
	it := schemaKey().av()
	setN(it, attrVersion, SchemaVersion)
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: it, ConditionExpression: aws.String(e.notExists()),
		ExpressionAttributeNames: e.nameMap(),
	})
	if _, failed := conditionFailed(err); err != nil && !failed {
		return ddbErr("PutItem", table, err)
	}
	return nil
}
