package dynamoworld

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// A single write's failed condition reads as the cancellation of a
// transaction of that write, with the item found (the fence's ALL_OLD);
// anything else stays an error of unknown outcome.
func TestSingleWriteFailureAsCancellation(t *testing.T) {
	fence := &op{key: itemKey{"r#x", commitSK(4)}, kind: opPut, tag: tagFence}
	old := item{attrSK: str(commitSK(4))}
	for _, tc := range []struct {
		name string
		err  error
		want func(ci *cancelInfo) bool
	}{
		{"condition", &types.ConditionalCheckFailedException{Message: aws.String("x"), Item: old},
			func(ci *cancelInfo) bool { return ci.fence && getS(ci.fenceItem, attrSK) == commitSK(4) }},
		{"wrapped condition", fmt.Errorf("op: %w", &types.ConditionalCheckFailedException{Message: aws.String("x")}),
			func(ci *cancelInfo) bool { return ci.fence && ci.fenceItem == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci, ok := cancelled(asCancellation(tc.err), []*op{fence})
			if !ok || !tc.want(ci) {
				t.Fatalf("cancellation %+v (%v)", ci, ok)
			}
		})
	}
	// Throttling or a conflict after the SDK's retries: an earlier attempt
	// may have landed (a single write has no request token).
	for _, err := range []error{
		errors.New("connection reset"),
		&types.TransactionConflictException{Message: aws.String("x")},
		&types.ProvisionedThroughputExceededException{Message: aws.String("x")},
		&smithy.GenericAPIError{Code: "ThrottlingException"},
		&smithy.GenericAPIError{Code: "ValidationException"},
	} {
		if _, ok := cancelled(asCancellation(err), []*op{fence}); ok {
			t.Fatalf("%v read as a cancellation: its outcome is unknown", err)
		}
	}
}
