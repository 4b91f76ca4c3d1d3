package dynamoworld

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/world"
)

// Extend hides a delivered message for p.Visibility from now (SQS rounds it
// up to whole seconds): ChangeMessageVisibility, which keeps the receipt
// handle valid.
func (w *World) Extend(ctx context.Context, p *world.ExtendParams) error {
	switch {
	case p == nil || p.Receipt == "":
		return invalid("receipt required")
	case p.Visibility < 0 || p.Visibility > maxVisibility:
		return invalid("visibility %s outside 0 to 12h", p.Visibility)
	}
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	_, err := w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: aws.String(p.Receipt), VisibilityTimeout: int32(ceilSeconds(p.Visibility)),
	})
	if err != nil {
		return sqsErr("ChangeMessageVisibility", w.cfg.QueueURL, err)
	}
	return nil
}
