// Command sleeper is a Lambda function for the executor's integration test:
// it sleeps for the event's sleepMs, ignoring its deadline, so that an
// invocation can outlive the function's timeout.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type event struct {
	SleepMs int `json:"sleepMs"`
}

func main() {
	lambda.Start(func(_ context.Context, e event) (string, error) {
		time.Sleep(time.Duration(e.SleepMs) * time.Millisecond)
		return "slept", nil
	})
}
