package dynamoworld

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skeinflow/skein/internal/knobs"
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
	// Emulator relaxes checks that emulators fail: DynamoDB Local's error
	// answers carry no CRC32 header.
	Emulator bool
}

// NewClients builds the clients from an aws.Config (config.LoadDefaultConfig
// honours AWS_ENDPOINT_URL_DYNAMODB, _SQS and _S3). Every client retries
// with jittered exponential backoff: throttling
// (ProvisionedThroughputExceededException, RequestLimitExceeded,
// ThrottlingException), 5xx answers, network errors and, for DynamoDB,
// TransactionConflictException. TransactWriteItems is idempotent across
// those retries: the SDK sends one ClientRequestToken for all of them.
// Middleware for every client goes in cfg.APIOptions. Options are for
// Skein's own wiring and tests.
func NewClients(cfg aws.Config, o ClientOptions, opts ...knobs.Option) Clients {
	maxBackoff := knobs.Apply(opts).MaxBackoff
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 8
	}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			if maxBackoff > 0 {
				so.MaxBackoff = maxBackoff
				so.Backoff = retry.NewExponentialJitterBackoff(maxBackoff)
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
		}),
		SQS: sqs.NewFromConfig(cfg, func(opt *sqs.Options) {
			opt.Retryer = retryer()
		}),
		S3: s3.NewFromConfig(cfg, func(opt *s3.Options) {
			opt.Retryer = retryer()
			opt.UsePathStyle = o.S3PathStyle
			opt.DisableLogOutputChecksumValidationSkipped = true
		}),
	}
}
