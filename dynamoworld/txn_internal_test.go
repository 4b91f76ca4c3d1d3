package dynamoworld

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// A single write's failure reads as the cancellation of a transaction of
// that write: a failed condition with the item found (the fence's ALL_OLD),
// a conflict with a transaction, throttling; anything else stays an error
// of unknown outcome.
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
		{"transaction conflict", &types.TransactionConflictException{Message: aws.String("x")},
			func(ci *cancelInfo) bool { return ci.conflict && !ci.fence }},
		{"throttled", &types.ProvisionedThroughputExceededException{Message: aws.String("x")},
			func(ci *cancelInfo) bool { return ci.throttled && !ci.fence }},
		{"throttled by code", &smithy.GenericAPIError{Code: "ThrottlingException"},
			func(ci *cancelInfo) bool { return ci.throttled }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci, ok := cancelled(asCancellation(tc.err), []*op{fence})
			if !ok || !tc.want(ci) {
				t.Fatalf("cancellation %+v (%v)", ci, ok)
			}
		})
	}
	other := errors.New("connection reset")
	if got := asCancellation(other); got != other {
		t.Fatalf("an error of unknown outcome became %v", got)
	}
	if _, ok := cancelled(asCancellation(&smithy.GenericAPIError{Code: "ValidationException"}), []*op{fence}); ok {
		t.Fatal("a validation error read as a cancellation")
	}
}
