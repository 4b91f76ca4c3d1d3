package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/encrypt/kmskeys"
	"github.com/skeinflow/skein/internal/envvars"
	"github.com/skeinflow/skein/internal/knobs"
)

// remote names a deployed stack's resources: by flags, by environment
// (SKEIN_TABLE, SKEIN_QUEUE_URL, SKEIN_BUCKET, SKEIN_STACK, SKEIN_ENDPOINT,
// and the AWS SDK's own AWS_REGION, AWS_ENDPOINT_URL_*, credentials), or by
// the outputs of the CloudFormation stack sam deploy created.
type remote struct {
	table, queueURL, bucket string
	region, endpoint, stack string
	samEnv, samConfig       string // -sam-env: the stack sam deploy's config names
	kmsKey                  string // -kms-key: the KMS key sealing payloads (the stack's PayloadKeyArn)
}

// stackDescriber is the part of the CloudFormation client skein uses.
type stackDescriber interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// remoteFromEnv returns the defaults the environment gives.
func remoteFromEnv(v envvars.Vars) remote {
	return remote{
		table: v.Table, queueURL: v.QueueURL, bucket: v.Bucket,
		stack: v.Stack, endpoint: v.Endpoint, kmsKey: v.KMSKeyID,
	}
}

// flags defines the flags that point skein at a deployed stack.
func (r *remote) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.stack, "stack", r.stack, "read the table, queue and bucket from the outputs of the CloudFormation stack `name` (sam deploy's stack_name; $SKEIN_STACK)")
	fs.StringVar(&r.samEnv, "sam-env", r.samEnv, "the stack sam deploy deploys in the config environment `env` (default, prod, …) of -samconfig: its stack_name and region")
	fs.StringVar(&r.samConfig, "samconfig", cmpOr(r.samConfig, "samconfig.toml"), "the sam deploy config `file` -sam-env reads")
	fs.StringVar(&r.table, "table", r.table, "the deployed stack's DynamoDB `table` ($SKEIN_TABLE); instead of -db")
	fs.StringVar(&r.queueURL, "queue-url", r.queueURL, "the deployed stack's SQS queue `url` ($SKEIN_QUEUE_URL)")
	fs.StringVar(&r.bucket, "bucket", r.bucket, "the deployed stack's S3 `bucket` ($SKEIN_BUCKET)")
	fs.StringVar(&r.region, "region", r.region, "the AWS `region` (default $AWS_REGION or the AWS profile's)")
	fs.StringVar(&r.kmsKey, "kms-key", r.kmsKey, "the KMS `key` that seals a stack's payloads ($SKEIN_KMS_KEY_ID; default: the stack's PayloadKeyArn output): payloads are shown decrypted when your credentials may use it, and a run skein starts (runs rerun) is sealed with it, for workers that hold the key")
	fs.StringVar(&r.endpoint, "endpoint", r.endpoint, "send every AWS request to `url` (an emulator such as LocalStack; $SKEIN_ENDPOINT; per service: $AWS_ENDPOINT_URL_DYNAMODB, _SQS, _S3)")
}

// set says whether the command works on a deployed stack, not a local store.
func (r *remote) set() bool { return r.table != "" || r.stack != "" || r.samEnv != "" }

// where names the store for messages.
func (e *env) where() string {
	switch {
	case e.remote.table != "":
		return "table " + e.remote.table
	case e.remote.stack != "":
		return "stack " + e.remote.stack
	}
	return e.db
}

// openRemote opens a dynamoworld World on the deployed stack's resources.
func (e *env) openRemote(ctx context.Context) error {
	r := e.remote
	if r.samEnv != "" && r.stack == "" {
		stack, region, err := samStack(r.samConfig, r.samEnv)
		if err != nil {
			return err
		}
		r.stack, r.region = stack, cmpOr(r.region, region)
	}
	// The SDK's own logger writes lines such as its IMDS fallback warning to
	// stderr ahead of the CLI's error: silence it; errors say what failed.
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{}), config.WithClientLogMode(0)}
	if r.region != "" {
		opts = append(opts, config.WithRegion(r.region))
	}
	if r.endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(r.endpoint))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return errors.New("no AWS region: pass -region or set $AWS_REGION")
	}
	if r.stack != "" {
		if err := e.readStack(ctx, awsCfg, &r); err != nil {
			return err
		}
		e.remote = r
	}
	if r.table == "" || r.queueURL == "" || r.bucket == "" {
		return usagef("a deployed stack needs its table, queue URL and bucket: pass -stack, or all of -table, -queue-url and -bucket")
	}
	custom := r.endpoint != "" || e.vars.EmulatorEndpoint()
	clients := dynamoworld.NewClients(awsCfg, dynamoworld.ClientOptions{
		// Emulators address buckets in the path and send error answers
		// without DynamoDB's CRC header.
		S3PathStyle: custom, Emulator: custom,
		// A command answers soon, or says why not.
		MaxAttempts: 3,
	}, knobs.WithMaxBackoff(time.Second))
	if e.sqs == nil {
		e.sqs = clients.SQS
	}
	w, err := dynamoworld.New(ctx, dynamoworld.Config{
		DynamoDB: clients.DynamoDB, SQS: clients.SQS, S3: clients.S3,
		Table: r.table, QueueURL: r.queueURL, Bucket: r.bucket,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return remoteError(err)
	}
	var keys encrypt.Keyring
	if r.kmsKey != "" {
		if keys, err = kmskeys.New(kms.NewFromConfig(awsCfg), r.kmsKey); err != nil {
			_ = w.Close()
			return err
		}
	}
	return e.serve(w, w, keys)
}

// readStack fills r's empty table, queue URL and bucket from the outputs of
// the stack r names (TableName, QueueUrl, BucketName).
func (e *env) readStack(ctx context.Context, awsCfg aws.Config, r *remote) error {
	var cf stackDescriber
	if e.stacks != nil {
		cf = e.stacks(awsCfg)
	} else {
		cf = cloudformation.NewFromConfig(awsCfg)
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(r.stack)})
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist") {
		return fmt.Errorf("no stack %q in %s (sam deploy's stack_name, in samconfig.toml; see -region)", r.stack, awsCfg.Region)
	}
	if err != nil {
		return fmt.Errorf("describe stack %s: %w", r.stack, remoteError(err))
	}
	if len(out.Stacks) == 0 {
		return fmt.Errorf("no stack %q in %s", r.stack, awsCfg.Region)
	}
	for _, o := range out.Stacks[0].Outputs {
		v := aws.ToString(o.OutputValue)
		switch aws.ToString(o.OutputKey) {
		case "TableName":
			r.table = cmpOr(r.table, v)
		case "QueueUrl":
			r.queueURL = cmpOr(r.queueURL, v)
		case "BucketName":
			r.bucket = cmpOr(r.bucket, v)
		case "PayloadKeyArn":
			r.kmsKey = cmpOr(r.kmsKey, v)
		}
	}
	if r.table == "" || r.queueURL == "" || r.bucket == "" {
		return fmt.Errorf("stack %s has no TableName, QueueUrl and BucketName outputs: is it a Skein stack?", r.stack)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// remoteError shortens the SDK's errors that mean the stack cannot be
// reached at all into one line saying what to check.
func remoteError(err error) error {
	s := err.Error()
	first, _, _ := strings.Cut(s, "\n")
	switch {
	case strings.Contains(s, "failed to retrieve credentials") || strings.Contains(s, "no EC2 IMDS role found"):
		return errors.New("no AWS credentials: set AWS_PROFILE (aws sso login) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	case strings.Contains(first, "connection refused") || strings.Contains(first, "no such host") || strings.Contains(first, "i/o timeout"):
		reason := first
		for _, at := range []string{"dial tcp", "lookup "} {
			if i := strings.Index(first, at); i >= 0 {
				reason = first[i:]
				break
			}
		}
		return fmt.Errorf("cannot reach AWS (%s): check -region, -endpoint and the network", reason)
	}
	return err
}
