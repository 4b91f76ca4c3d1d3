package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
)

// stackAnswer is a DescribeStacks that returns what it holds.
type stackAnswer struct {
	out *cloudformation.DescribeStacksOutput
	err error
}

func (s stackAnswer) DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	return s.out, s.err
}

// Pointing skein at a stack that is not there, or not whole, is one clear
// line and a non-zero exit, before any request to its resources.
func TestRemoteBadInput(t *testing.T) {
	t.Parallel()
	notSkein := &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{Outputs: []cftypes.Output{
		{OutputKey: aws.String("TableName"), OutputValue: aws.String("t")},
	}}}}
	for _, tc := range []struct {
		name   string
		args   []string
		stacks stackAnswer
		code   int
		want   string
	}{
		{"no such stack", []string{"-stack", "nope", "runs", "list"},
			stackAnswer{err: &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id nope does not exist"}},
			1, `no stack "nope" in eu-west-1`},
		{"not a skein stack", []string{"runs", "list", "-stack", "other"}, stackAnswer{out: notSkein},
			1, "stack other has no TableName, QueueUrl and BucketName outputs"},
		{"table alone", []string{"-table", "t", "runs", "list"}, stackAnswer{},
			2, "needs its table, queue URL and bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb syncBuffer
			e := &env{stdout: &out, stderr: &errb, stacks: func(aws.Config) stackDescriber { return tc.stacks }}
			code := runWith(context.Background(), e, append([]string{"-region", "eu-west-1"}, tc.args...))
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n != 0 {
				t.Errorf("%d lines of error, want one: %q", n+1, errb.String())
			}
		})
	}
}

// The SDK's long errors for an unreachable endpoint or missing credentials
// become one line.
func TestRemoteError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"dynamoworld: DynamoDB DescribeTable on table \"tab\": operation error DynamoDB: DescribeTable, exceeded maximum number of attempts, 3, " +
			"request send failed, Post \"http://127.0.0.1:1/\": dial tcp 127.0.0.1:1: connect: connection refused\ndynamoworld: SQS ...",
			"cannot reach AWS (dial tcp 127.0.0.1:1: connect: connection refused): check -region, -endpoint and the network"},
		{"operation error CloudFormation: DescribeStacks, get identity: get credentials: failed to refresh cached credentials, failed to retrieve credentials",
			"no AWS credentials: set AWS_PROFILE (aws sso login) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"AccessDenied: not allowed", "AccessDenied: not allowed"},
	} {
		if got := remoteError(errors.New(tc.in)).Error(); got != tc.want {
			t.Errorf("remoteError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// -sam-env takes the stack name and region from samconfig.toml, as sam
// deploy would.
func TestSamEnv(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "samconfig.toml")
	toml := `version = 0.1
[default.global.parameters]
stack_name = "orders"

[default.deploy.parameters]
capabilities = "CAPABILITY_IAM"
region = "us-east-2"

[prod.deploy.parameters]
stack_name = "orders-prod" # the live one
region = "eu-central-1"
`
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := stackAnswer{err: &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id x does not exist"}}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"default", []string{"-sam-env", "default"}, 1, `no stack "orders" in us-east-2`},
		{"prod", []string{"-sam-env", "prod"}, 1, `no stack "orders-prod" in eu-central-1`},
		{"region flag wins", []string{"-sam-env", "prod", "-region", "ap-south-1"}, 1, `no stack "orders-prod" in ap-south-1`},
		{"unknown env", []string{"-sam-env", "staging"}, 1, `names no stack_name for the config environment "staging"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb syncBuffer
			e := &env{stdout: &out, stderr: &errb, stacks: func(aws.Config) stackDescriber { return missing }}
			code := runWith(context.Background(), e, append(append([]string{"-samconfig", cfg}, tc.args...), "runs", "list"))
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.want)
			}
		})
	}
}
