package dynamoworld

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestSchemaVersion: New's startup check opens a table of its own
// version, refuses one of another version and one that holds runs without
// a version (a *SchemaError that says what to do), and claims an empty
// table that has no version yet (created by a template), writing the item
// on its absence.
func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	version := func(v int) item {
		it := schemaKey().av()
		setN(it, attrVersion, int64(v))
		return it
	}
	for _, tc := range []struct {
		name    string
		stored  item // the schema item as stored (nil: none)
		runs    int  // runs the table holds
		racer   item // a schema item another World puts between the read and the claim
		want    int  // the version refused (-1: none)
		claimed bool // New put the schema item
	}{
		{"this version", version(SchemaVersion), 1, nil, -1, false},
		{"another version", version(SchemaVersion + 1), 1, nil, SchemaVersion + 1, false},
		{"runs without a version", nil, 1, nil, 0, false},
		{"an empty table", nil, 0, nil, -1, true},
		{"an empty table claimed meanwhile by a newer World", nil, 0, version(SchemaVersion + 2), SchemaVersion + 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored := tc.stored
			claimed := false
			ddb := &fakeDDB{scriptSchema: true}
			ddb.getItem = func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: stored}, nil
			}
			ddb.query = func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				if in.IndexName == nil || *in.IndexName != indexAll {
					t.Errorf("the claim queried %v, want the index of all runs", in.IndexName)
				}
				return &dynamodb.QueryOutput{Items: make([]map[string]types.AttributeValue, tc.runs)}, nil
			}
			ddb.putItem = func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				if in.ConditionExpression == nil {
					t.Error("the schema item is put without a condition")
				}
				claimed = true
				if tc.racer != nil {
					stored = tc.racer
					return nil, &types.ConditionalCheckFailedException{}
				}
				stored = in.Item
				return &dynamodb.PutItemOutput{}, nil
			}
			ddb.describe = func(*dynamodb.DescribeTableInput) (*dynamodb.DescribeTableOutput, error) {
				gsi := func(name string) types.GlobalSecondaryIndexDescription {
					return types.GlobalSecondaryIndexDescription{IndexName: aws.String(name)}
				}
				return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{GlobalSecondaryIndexes: []types.GlobalSecondaryIndexDescription{
					gsi(indexAll), gsi(indexWorkflow), gsi(indexStatus),
				}}}, nil
			}
			_, err := New(context.Background(), Config{
				DynamoDB: ddb, SQS: &fakeSQS{}, S3: newFakeS3(), streams: fakeStreams{},
				Table: "skein-test", QueueURL: "http://sqs.local/000000000000/q", Bucket: "skein-test",
			})
			var se *SchemaError
			switch {
			case tc.want < 0 && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want >= 0 && (!errors.As(err, &se) || se.Found != tc.want || se.Want != SchemaVersion || se.Table != "skein-test"):
				t.Fatalf("New: %v; want a SchemaError finding %d", err, tc.want)
			case claimed != tc.claimed:
				t.Fatalf("the schema item was put: %v, want %v", claimed, tc.claimed)
			}
		})
	}
}
