package skeinlambda

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/skeinflow/skein/dynamoworld"
)

// Retries within the deadline. The SDK's retryer backs off between
// attempts whatever time the request's context has left: a throttled
// request near the invocation's deadline slept until the context ended
// and failed with a cancellation, its caller left no time to answer with
// what went wrong. The functions' clients make a retry only when its
// backoff leaves the attempt minAttemptTime before the context's
// deadline; otherwise the request fails at once with the error of its
// last attempt, wrapped in a *retryPastDeadlineError.

// minAttemptTime is the least time a retry's attempt is left before the
// request's deadline: a DynamoDB or SQS request takes a few to a few tens
// of milliseconds in its region.
const minAttemptTime = 100 * time.Millisecond

// boundRetries rebuilds the clients with retries bounded by their
// requests' deadlines (deadlineRetries) on the clock now.
func boundRetries(c dynamoworld.Clients, now func() time.Time) dynamoworld.Clients {
	return dynamoworld.Clients{
		DynamoDB: dynamodb.New(c.DynamoDB.Options(), func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, deadlineRetries(o.Retryer, now))
		}),
		SQS: sqs.New(c.SQS.Options(), func(o *sqs.Options) {
			o.APIOptions = append(o.APIOptions, deadlineRetries(o.Retryer, now))
		}),
		S3: s3.New(c.S3.Options(), func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, deadlineRetries(o.Retryer, now))
		}),
	}
}

// deadlineRetries returns a stack option that bounds the retries of a
// request whose context has a deadline: base wrapped in a deadlineRetryer
// on the clock now. The SDK's retry middleware is built per request from
// the client's retryer, whose RetryDelay is not given the request's
// context: the option swaps it for one that builds it with a retryer that
// knows the request's deadline, keeping its settings. A retryer of the
// SDK's first interface (no aws.RetryerV2) is left as it is.
func deadlineRetries(base aws.Retryer, now func() time.Time) func(*middleware.Stack) error {
	v2, ok := base.(aws.RetryerV2)
	return func(stack *middleware.Stack) error {
		if !ok {
			return nil
		}
		m, found := stack.Finalize.Get((*retry.Attempt)(nil).ID())
		if !found {
			return nil // a presigned request: no retries
		}
		orig, isAttempt := m.(*retry.Attempt)
		if !isAttempt {
			return nil
		}
		_, err := stack.Finalize.Swap(orig.ID(), &deadlineAttempt{orig: orig, base: v2, now: now})
		return err
	}
}

// deadlineAttempt is the SDK's retry middleware with a retryer bound by
// the request's deadline.
type deadlineAttempt struct {
	orig *retry.Attempt
	base aws.RetryerV2
	now  func() time.Time
}

func (a *deadlineAttempt) ID() string { return a.orig.ID() }

func (a *deadlineAttempt) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return a.orig.HandleFinalize(ctx, in, next)
	}
	r := &deadlineRetryer{RetryerV2: a.base, deadline: deadline, now: a.now}
	m := retry.NewAttemptMiddleware(r, smithyhttp.RequestCloner, func(m *retry.Attempt) {
		m.LogAttempts = a.orig.LogAttempts
		m.OperationMeter = a.orig.OperationMeter
		m.ClientSkew = a.orig.ClientSkew
		m.DisableClockSkewCorrection = a.orig.DisableClockSkewCorrection
	})
	return m.HandleFinalize(ctx, in, next)
}

// deadlineRetryer is a retryer that refuses a retry whose backoff would
// leave its attempt less than minAttemptTime before deadline.
type deadlineRetryer struct {
	aws.RetryerV2
	deadline time.Time
	now      func() time.Time
}

// RetryDelay is the base retryer's delay, or a *retryPastDeadlineError
// wrapping the attempt's error when the retry would not fit.
func (r *deadlineRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.RetryerV2.RetryDelay(attempt, err)
	if derr != nil {
		return d, derr
	}
	if left := r.deadline.Sub(r.now()); d+minAttemptTime > left {
		return 0, &retryPastDeadlineError{Delay: d, Left: left, Err: err}
	}
	return d, nil
}

// retryPastDeadlineError is the error of a request that gave up retrying:
// the retry's backoff (Delay) would have left its attempt too little of the
// time left before the context's deadline (Left). It wraps the last
// attempt's error, by which callers judge the failure.
type retryPastDeadlineError struct {
	Delay, Left time.Duration
	Err         error
}

func (e *retryPastDeadlineError) Error() string {
	return fmt.Sprintf("no retry: its backoff (%s) would end too close to the request's deadline (%s left): %v",
		e.Delay.Round(time.Millisecond), e.Left.Round(time.Millisecond), e.Err)
}

func (e *retryPastDeadlineError) Unwrap() error { return e.Err }
