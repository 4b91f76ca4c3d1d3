package dynamoworld

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The World's own errors name the AWS service, the operation and the
// resource, and wrap the SDK error (so errors.As reaches smithy.APIError and
// context errors stay visible).

func ddbErr(op, table string, err error) error {
	return fmt.Errorf("dynamoworld: DynamoDB %s on table %q: %w", op, table, err)
}

func sqsErr(op, queueURL string, err error) error {
	return fmt.Errorf("dynamoworld: SQS %s on queue %s: %w", op, queueURL, err)
}

func s3Err(op, bucket, key string, err error) error {
	if key == "" {
		return fmt.Errorf("dynamoworld: S3 %s on bucket %q: %w", op, bucket, err)
	}
	return fmt.Errorf("dynamoworld: S3 %s on s3://%s/%s: %w", op, bucket, key, err)
}

// errorCode returns the AWS error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// conditionFailed returns the item of a failed single-item condition (ALL_OLD
// when requested) and whether err is one.
func conditionFailed(err error) (item, bool) {
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return cf.Item, true
	}
	return nil, false
}

func notFoundCode(code string) bool {
	switch code {
	case "ResourceNotFoundException", "NoSuchBucket", "NotFound", "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist":
		return true
	}
	return false
}
