package dynamoworld

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Clients are the three SDK clients a World uses.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	S3       *s3.Client
}

// ClientOptions tune NewClients.
type ClientOptions struct {
	// S3PathStyle addresses buckets in the path (http://host/bucket/key), as
	// S3 emulators need.
	S3PathStyle bool
	// MaxAttempts bounds the SDK's attempts per request (default 8).
	MaxAttempts int
	// MaxBackoff bounds the wait between attempts (default the SDK's 20s).
	MaxBackoff time.Duration
	// Emulator relaxes checks that emulators fail: DynamoDB Local's error
	// answers carry no CRC32 header.
	Emulator bool
	// APIOptions are added to every client's middleware stack (tests use
	// them to inject faults or count requests).
	APIOptions []func(*middleware.Stack) error
}

// NewClients builds the clients from an aws.Config (config.LoadDefaultConfig
// honours AWS_ENDPOINT_URL_DYNAMODB, _SQS and _S3). Every client retries
// with jittered exponential backoff: throttling
// (ProvisionedThroughputExceededException, RequestLimitExceeded,
// ThrottlingException), 5xx answers, network errors and, for DynamoDB,
// TransactionConflictException. TransactWriteItems is idempotent across
// those retries: the SDK sends one ClientRequestToken for all of them.
func NewClients(cfg aws.Config, o ClientOptions) Clients {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 8
	}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			if o.MaxBackoff > 0 {
				so.MaxBackoff = o.MaxBackoff
				so.Backoff = retry.NewExponentialJitterBackoff(o.MaxBackoff)
			}
			so.Retryables = append(so.Retryables, retry.RetryableErrorCode{Codes: map[string]struct{}{
				"TransactionConflictException": {},
			}})
			// No client-side retry quota: a burst of throttling must not
			// turn into failed commits; attempts are bounded per request.
			so.RateLimiter = ratelimit.None
		})
	}
	return Clients{
		DynamoDB: dynamodb.NewFromConfig(cfg, func(opt *dynamodb.Options) {
			opt.Retryer = retryer()
			opt.DisableValidateResponseChecksum = o.Emulator
			opt.APIOptions = append(opt.APIOptions, o.APIOptions...)
		}),
		SQS: sqs.NewFromConfig(cfg, func(opt *sqs.Options) {
			opt.Retryer = retryer()
			opt.APIOptions = append(opt.APIOptions, o.APIOptions...)
		}),
		S3: s3.NewFromConfig(cfg, func(opt *s3.Options) {
			opt.Retryer = retryer()
			opt.UsePathStyle = o.S3PathStyle
			opt.DisableLogOutputChecksumValidationSkipped = true
			opt.APIOptions = append(opt.APIOptions, o.APIOptions...)
		}),
	}
}
