// Package awslimits holds the bounds the AWS services impose on Skein's
// stack (and the ones dynamoworld draws from them), written once for the
// packages that must respect them without importing the AWS SDK: the
// engine, the Lambda handler's environment parser and dynamoworld.
package awslimits

import "time"

const (
	// MaxQueueDelay is the longest delay SQS applies to one message
	// (DelaySeconds at most 900); longer delays travel as chained hops.
	MaxQueueDelay = 15 * time.Minute

	// MaxItemBytes is the largest item dynamoworld writes: DynamoDB's limit
	// is 400 KB; the margin covers the attribute-size estimate.
	MaxItemBytes = 350 << 10
	// MaxTransactionItems is DynamoDB's limit on one TransactWriteItems.
	MaxTransactionItems = 100

	// MinClaimCheckThreshold and MaxClaimCheckThreshold bound dynamoworld's
	// claim-check threshold in bytes: a payload over the threshold is kept
	// in S3, and up to MaxClaimCheckThreshold a payload fits a DynamoDB
	// item (400 KB) with its event and the other payloads of a
	// transaction.
	MinClaimCheckThreshold = 1 << 10
	MaxClaimCheckThreshold = 100 << 10
)
