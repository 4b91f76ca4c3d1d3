// Package awslimits holds the bounds the AWS services impose on Skein's
// stack, written once for the packages that must respect them without
// importing the AWS SDK: the engine, the Lambda handler's environment
// parser and dynamoworld, which exports them under its own names.
package awslimits

import "time"

const (
	// MaxQueueDelay is the longest delay SQS applies to one message
	// (DelaySeconds at most 900); longer delays travel as chained hops.
	MaxQueueDelay = 15 * time.Minute
)
