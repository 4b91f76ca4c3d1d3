//go:build integration

package encrypt_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// TestSealedBitFlipSweepDynamo is TestSealedBitFlipSweep on DynamoDB (the
// emulator): every single-bit flip of a sealed run's output, written into
// the run's item in the table with its checksum recomputed (without, the
// World refuses it first: world.ErrCorrupt), is a typed error to a fresh
// reader; so are
// plaintext in its place and an envelope with an empty key ID. A sealed
// output large enough to be claim-checked to S3 reads back.
func TestSealedBitFlipSweepDynamo(t *testing.T) {
	ctx := context.Background()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, url := dynamotest.NewResources(t, c)
	open := func() *dynamoworld.World {
		cfg := dynamotest.Config(c, res, url)
		w, err := dynamoworld.New(ctx, cfg, knobs.WithCacheRuns(-1)) // every read from the table
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}
	dw := open()
	keys := keyring(t, "k1", map[string][]byte{"k1": key(1)})
	big := `"` + strings.Repeat("x", 80<<10) + `"`
	appendAll(t, reader(t, dw, keys), runA, chargeEvents(`{"chargeId":"ch_1","cents":500}`)...)
	appendAll(t, reader(t, dw, keys), runB, chargeEvents(big)...)

	fresh := open()
	if r, err := reader(t, fresh, keys).GetRun(ctx, &world.GetRunParams{RunID: runB}); err != nil || string(r.Output) != big {
		t.Fatalf("a claim-checked sealed output: %d bytes, %v", len(r.Output), err)
	}
	raw, err := fresh.GetRun(ctx, &world.GetRunParams{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	key := runItemKey(t, c, res.Table, runA, raw.Output)
	// The edits recompute the item's checksum (dynamotest.Reseal), as an
	// attacker with write access can: the sealed layer must catch them.
	set := func(b []byte) {
		got, err := c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(res.Table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		got.Item["out"] = &types.AttributeValueMemberB{Value: b}
		dynamotest.Reseal(got.Item)
		_, err = c.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(res.Table), Item: got.Item})
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func() error {
		_, err := reader(t, fresh, keys).GetRun(ctx, &world.GetRunParams{RunID: runA})
		return err
	}
	tried, silent := 0, 0
	for bit := range len(raw.Output) * 8 {
		set(flip(raw.Output, bit))
		tried++
		if err := read(); err == nil {
			silent++
			t.Errorf("bit %d: no error", bit)
		} else {
			wantTampered(t, "flip", err)
		}
	}
	t.Logf("sealed run output on DynamoDB: %d single-bit flips tried, %d silent", tried, silent)
	var env map[string]any
	_ = json.Unmarshal(raw.Output, &env)
	env["kid"] = ""
	noKid, _ := json.Marshal(env)
	for name, b := range map[string][]byte{"plaintext": []byte(`{"chargeId":"ch_evil","cents":1}`), "empty key ID": noKid} {
		set(b)
		wantTampered(t, name, read())
	}
	set(raw.Output)
	if err := read(); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// runItemKey returns the key of the item of run whose "out" attribute
// holds out.
func runItemKey(t *testing.T, c dynamoworld.Clients, table, run string, out []byte) map[string]types.AttributeValue {
	t.Helper()
	q, err := c.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "r#" + run}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range q.Items {
		if b, ok := it["out"].(*types.AttributeValueMemberB); ok && string(b.Value) == string(out) {
			return map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}
		}
	}
	t.Fatalf("no item of run %s holds its output", run)
	return nil
}
