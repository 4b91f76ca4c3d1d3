// Command probe is a Lambda function for the executor's integration tests.
// An event {"sleepMs": n} sleeps for n ms, ignoring its deadline (so that an
// invocation can outlive the function's timeout), and answers "slept". An
// SQS batch reports the records whose body starts with "poison" failed
// (ReportBatchItemFailures) and, when PROBE_QUEUE_URL is set, sends the
// batch's size there, so that a test can see how the batches were cut.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type event struct {
	SleepMs int                 `json:"sleepMs"`
	Records []events.SQSMessage `json:"Records"`
}

func main() {
	var client *sqs.Client
	probe := os.Getenv("PROBE_QUEUE_URL")
	if probe != "" {
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			panic(err)
		}
		client = sqs.NewFromConfig(cfg)
	}
	lambda.Start(func(ctx context.Context, e event) (json.RawMessage, error) {
		if e.Records == nil {
			time.Sleep(time.Duration(e.SleepMs) * time.Millisecond)
			return json.RawMessage(`"slept"`), nil
		}
		var resp events.SQSEventResponse
		for _, r := range e.Records {
			if strings.HasPrefix(r.Body, "poison") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		if client != nil {
			n := strconv.Itoa(len(e.Records))
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &probe, MessageBody: aws.String(n)}); err != nil {
				return nil, err
			}
		}
		return json.Marshal(resp)
	})
}
