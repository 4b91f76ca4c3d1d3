package lambdaemu

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAdminAPI creates queues; *sqs.Client satisfies it.
type QueueAdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Queues names a provisioned queue and its dead-letter queue (empty when it has no redrive policy).
type Queues struct {
	URL, ARN                     string
	DeadLetterURL, DeadLetterARN string
}

// ProvisionQueues creates the queue name (and name+"-dlq" when q has a redrive policy) with q's
// visibility timeout, delay, retention, receive wait and redrive policy, so that the SQS
// implementation itself moves a message to the dead-letter queue after MaxReceiveCount receives.
// FIFO queues get the ".fifo" suffix. Creating a queue that exists with the same attributes is a no-op.
func ProvisionQueues(ctx context.Context, c QueueAdminAPI, name string, q QueueSpec) (*Queues, error) {
	out := &Queues{}
	var redrive string
	if q.Redrive != nil {
		url, arn, err := createQueue(ctx, c, name+"-dlq", q.Redrive.DeadLetter, "")
		if err != nil {
			return nil, err
		}
		out.DeadLetterURL, out.DeadLetterARN = url, arn
		b, err := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": q.Redrive.MaxReceiveCount})
		if err != nil {
			return nil, err
		}
		redrive = string(b)
	}
	url, arn, err := createQueue(ctx, c, name, q, redrive)
	if err != nil {
		return nil, err
	}
	out.URL, out.ARN = url, arn
	return out, nil
}

func createQueue(ctx context.Context, c QueueAdminAPI, name string, q QueueSpec, redrive string) (string, string, error) {
	secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	attrs := map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout):             secs(q.VisibilityTimeout),
		string(types.QueueAttributeNameDelaySeconds):                  secs(q.Delay),
		string(types.QueueAttributeNameMessageRetentionPeriod):        secs(q.MessageRetention),
		string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds): secs(q.ReceiveWait),
	}
	if q.MessageRetention <= 0 {
		delete(attrs, string(types.QueueAttributeNameMessageRetentionPeriod))
	}
	if q.FIFO {
		if !strings.HasSuffix(name, ".fifo") {
			name += ".fifo"
		}
		attrs[string(types.QueueAttributeNameFifoQueue)] = "true"
	}
	if redrive != "" {
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = redrive
	}
	created, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("lambdaemu: create queue %s: %w", name, err)
	}
	url := aws.ToString(created.QueueUrl)
	got, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("lambdaemu: queue %s ARN: %w", name, err)
	}
	return url, got.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}
