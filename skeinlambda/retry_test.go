package skeinlambda

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/knobs"
)

// unavailable is a service that answers every request 503, which the
// clients retry, and counts the requests.
func unavailable(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestRetriesEndBeforeTheDeadline: the clients as New builds them
// (boundRetries over dynamoworld.NewClients) make no retry
// whose backoff would leave its attempt less than minAttemptTime before
// the request's deadline (judged on a clock the test sets): the request
// fails at once with its last attempt's error. They retried with the
// SDK's backoff whatever the time left, sleeping until the context ended
// and failing with a cancellation, leaving the caller no time to answer.
// With time left, a request makes all its attempts.
func TestRetriesEndBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	const attempts = 4
	calls := map[string]func(context.Context, dynamoworld.Clients) error{
		"dynamodb": func(ctx context.Context, c dynamoworld.Clients) error {
			_, err := c.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("events"),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
			return err
		},
		"sqs": func(ctx context.Context, c dynamoworld.Clients) error {
			_, err := c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("work")})
			return err
		},
		"s3": func(ctx context.Context, c dynamoworld.Clients) error {
			_, err := c.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("data")})
			return err
		},
	}
	for name, call := range calls {
		for _, c := range []struct {
			left time.Duration // before the deadline, on the clients' clock
			want int64         // requests
		}{
			{time.Hour, attempts},
			{minAttemptTime / 2, 1},
		} {
			t.Run(name+"/"+c.left.String(), func(t *testing.T) {
				t.Parallel()
				srv, n := unavailable(t)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				deadline, _ := ctx.Deadline()
				clients := boundRetries(dynamoworld.NewClients(aws.Config{
					Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, BaseEndpoint: aws.String(srv.URL),
				}, dynamoworld.ClientOptions{
					// Backoffs of at most a millisecond: the test judges the
					// time left on its own clock, not by waiting.
					MaxAttempts: attempts, S3PathStyle: true, Emulator: true,
				}, knobs.WithMaxBackoff(time.Millisecond)), func() time.Time { return deadline.Add(-c.left) })
				err := call(ctx, clients)
				if err == nil {
					t.Fatal("no error from an unavailable service")
				}
				if got := n.Load(); got != c.want {
					t.Errorf("%d requests, want %d (%v)", got, c.want, err)
				}
				var past *retryPastDeadlineError
				if gave := errors.As(err, &past); gave != (c.want == 1) {
					t.Errorf("gave up for the deadline: %v, want %v (%v)", gave, c.want == 1, err)
				}
				var canceled *aws.RequestCanceledError
				if errors.As(err, &canceled) || ctx.Err() != nil {
					t.Errorf("the request was cancelled: %v", err)
				}
			})
		}
	}
}

// TestRetryDelayWithinDeadline: a retry is made when its backoff leaves
// minAttemptTime before the deadline, and refused, with the attempt's
// error, when it does not.
func TestRetryDelayWithinDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	attemptErr := errors.New("throttled")
	for _, c := range []struct {
		delay, left time.Duration
		ok          bool
	}{
		{time.Second, time.Second + minAttemptTime, true},
		{time.Second, time.Second + minAttemptTime - time.Millisecond, false},
		{0, minAttemptTime / 2, false},
		{0, -time.Second, false},
	} {
		r := &deadlineRetryer{RetryerV2: fixedDelay(c.delay), deadline: deadline,
			now: func() time.Time { return deadline.Add(-c.left) }}
		d, err := r.RetryDelay(1, attemptErr)
		if c.ok && (err != nil || d != c.delay) {
			t.Errorf("delay %s, %s left: %s, %v; want the retry", c.delay, c.left, d, err)
		}
		if !c.ok && !errors.Is(err, attemptErr) {
			t.Errorf("delay %s, %s left: %s, %v; want the attempt's error", c.delay, c.left, d, err)
		}
	}
}

// fixedDelay is a retryer whose backoff is always the same.
type fixedDelay time.Duration

func (f fixedDelay) IsErrorRetryable(error) bool                                     { return true }
func (f fixedDelay) MaxAttempts() int                                                { return 3 }
func (f fixedDelay) RetryDelay(int, error) (time.Duration, error)                    { return time.Duration(f), nil }
func (f fixedDelay) GetRetryToken(context.Context, error) (func(error) error, error) { return nop, nil }
func (f fixedDelay) GetInitialToken() func(error) error                              { return nop }
func (f fixedDelay) GetAttemptToken(context.Context) (func(error) error, error)      { return nop, nil }

func nop(error) error { return nil }

// TestNewBoundsRetries: the clients New gives the World bound their
// retries by the request's deadline (their retry middleware is
// deadlineAttempt's).
func TestNewBoundsRetries(t *testing.T) {
	t.Parallel()
	var wc dynamoworld.Config
	if _, err := New(context.Background(), registry(t), offline(), WithGetenv(env("flow")),
		WithWorldConfig(func(c *dynamoworld.Config) { wc = *c })); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]func(*middleware.Stack) error{
		"dynamodb": wc.DynamoDB.(*dynamodb.Client).Options().APIOptions,
		"sqs":      wc.SQS.(*sqs.Client).Options().APIOptions,
		"s3":       wc.S3.(*s3.Client).Options().APIOptions,
	} {
		stack := middleware.NewStack(name, smithyhttp.NewStackRequest)
		if err := stack.Finalize.Add(retry.NewAttemptMiddleware(retry.NewStandard(), smithyhttp.RequestCloner), middleware.After); err != nil {
			t.Fatal(err)
		}
		for _, f := range opts {
			if err := f(stack); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if m, _ := stack.Finalize.Get("Retry"); reflect.TypeOf(m) != reflect.TypeFor[*deadlineAttempt]() {
			t.Errorf("%s: the retry middleware is %T, want a *deadlineAttempt", name, m)
		}
	}
}
