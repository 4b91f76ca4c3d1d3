// Command echo is a tiny Lambda bootstrap for the lambdaemu tests, built with
// `CGO_ENABLED=0 go build -tags lambda.norpc`. It handles SQS events; each record's body is a command:
//
//	fail        report the record in batchItemFailures
//	bad-id      report an itemIdentifier that is not in the batch
//	empty-id    report an empty itemIdentifier
//	sleep DUR   sleep DUR (a Go duration), ignoring the deadline, as a long step would
//	error       return an error (a function error; the process lives on)
//	panic       panic (a function error; aws-lambda-go then exits the process)
//	exit        os.Exit(3) mid-invocation
//
// anything else succeeds. The response carries batchItemFailures plus an "echo" object describing the
// invocation (request ID, deadline, environment, process), which Lambda ignores.
//
// At init, ECHO_INIT_SLEEP (a Go duration) delays the first request and ECHO_INIT_EXIT=1 makes the
// process exit before it asks for work.
package main

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type info struct {
	RequestID   string            `json:"requestId"`
	FunctionARN string            `json:"functionArn"`
	DeadlineMs  int64             `json:"deadlineMs"`
	TraceID     string            `json:"traceId"`
	PID         int               `json:"pid"`
	Invocations int               `json:"invocations"` // in this process: 1 on a cold start
	Records     int               `json:"records"`
	Bodies      []string          `json:"bodies"`
	Env         map[string]string `json:"env"`
}

type response struct {
	BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
	Echo              info                         `json:"echo"`
}

type handler struct{ invocations int }

func (h *handler) handle(ctx context.Context, ev events.SQSEvent) (response, error) {
	h.invocations++
	out := response{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range ev.Records {
		out.Echo.Bodies = append(out.Echo.Bodies, r.Body)
		cmd, arg, _ := strings.Cut(strings.TrimSpace(r.Body), " ")
		switch cmd {
		case "fail":
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		case "bad-id":
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: "not-in-batch"})
		case "empty-id":
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ""})
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return response{}, err
			}
			time.Sleep(d)
		case "error":
			return response{}, errors.New("echo: told to fail the invocation")
		case "panic":
			panic("echo: told to panic")
		case "exit":
			os.Exit(3)
		}
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	out.Echo.RequestID = lc.AwsRequestID
	out.Echo.FunctionARN = lc.InvokedFunctionArn
	out.Echo.DeadlineMs = deadline.UnixMilli()
	out.Echo.TraceID = os.Getenv("_X_AMZN_TRACE_ID")
	out.Echo.PID = os.Getpid()
	out.Echo.Invocations = h.invocations
	out.Echo.Records = len(ev.Records)
	out.Echo.Env = map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_LAMBDA_") || strings.HasPrefix(k, "SKEIN_") || k == "AWS_REGION" ||
			k == "_HANDLER" || k == "LAMBDA_TASK_ROOT" {
			out.Echo.Env[k] = v
		}
	}
	sort.Strings(out.Echo.Bodies)
	return out, nil
}

func main() {
	if d, err := time.ParseDuration(os.Getenv("ECHO_INIT_SLEEP")); err == nil {
		time.Sleep(d)
	}
	if os.Getenv("ECHO_INIT_EXIT") == "1" {
		os.Exit(2)
	}
	h := &handler{}
	lambda.Start(h.handle)
}
