package dynamoworld

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/world"
)

// A stream opens in one transaction, its marker (new) then the run's
// count of streams (below Limits.MaxStreams); what its cancellation says
// decides: the marker taken is a stream opened before (not counted
// again), the count full a *world.LimitError, a conflict a retry.
func TestOpenStreamCountsInOneTransaction(t *testing.T) {
	run := testIDs.New(world.PrefixRun)
	for _, tc := range []struct {
		name    string
		reasons []map[int]string // one cancellation per attempt; then success
		created bool
		limit   bool
		tries   int
	}{
		{"new stream", nil, true, false, 1},
		{"opened before", []map[int]string{{0: "ConditionalCheckFailed"}}, false, false, 1},
		{"opened before, count full", []map[int]string{{0: "ConditionalCheckFailed", 1: "ConditionalCheckFailed"}}, false, false, 1},
		{"count full", []map[int]string{{1: "ConditionalCheckFailed"}}, false, true, 1},
		{"conflicts then new", []map[int]string{{1: "TransactionConflict"}, {0: "TransactionConflict"}}, true, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ddb := &fakeDDB{}
			w := newFakeWorld(t, ddb, newFakeS3(), func(c *Config) { c.Limits = world.Limits{MaxStreams: 5} })
			ddb.twrite = func(n int, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				if indexOf(in, streamKey(run, "out"), "put") != 0 || indexOf(in, streamCountKey(run), "update") != 1 || len(in.TransactItems) != 2 {
					t.Fatalf("transaction %+v: want the marker's put, then the count's update", in.TransactItems)
				}
				u := in.TransactItems[1].Update
				if !hasValue(u.ExpressionAttributeValues, "5") || aws.ToString(in.TransactItems[0].Put.ConditionExpression) == "" {
					t.Fatalf("the count's condition %q %v does not hold it below MaxStreams 5", aws.ToString(u.ConditionExpression), u.ExpressionAttributeValues)
				}
				if n <= len(tc.reasons) {
					return nil, cancel(2, tc.reasons[n-1], nil)
				}
				return &dynamodb.TransactWriteItemsOutput{}, nil
			}
			created, err := w.s.openStream(context.Background(), run, "out")
			var le *world.LimitError
			switch {
			case tc.limit && (!errors.As(err, &le) || le.Limit != "streams" || le.Max != 5 || le.Size != 6 || le.RunID != run):
				t.Fatalf("openStream: %v, want a *world.LimitError of streams, 6 of 5", err)
			case !tc.limit && (err != nil || created != tc.created):
				t.Fatalf("openStream: created %v, %v; want created %v", created, err, tc.created)
			}
			if len(ddb.writes) != tc.tries {
				t.Fatalf("%d transactions, want %d", len(ddb.writes), tc.tries)
			}
		})
	}
}

func hasValue(vs map[string]types.AttributeValue, n string) bool {
	for _, v := range vs {
		if nv, ok := v.(*types.AttributeValueMemberN); ok && nv.Value == n {
			return true
		}
	}
	return false
}
