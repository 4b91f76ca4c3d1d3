//go:build integration

// Package integration runs Skein end to end against AWS-compatible
// endpoints: the real Lambda bootstrap (examples/lambda, built for the host)
// driven by internal/lambdaemu's Lambda Runtime API server and SQS event
// source mapping, read from template.yaml, on DynamoDB, SQS and S3.
//
// The endpoints come from the standard AWS environment
// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3,
// AWS_REGION, credentials; SKEIN_S3_PATH_STYLE=1 for S3 emulators), so the
// same tests run against the offline emulators, LocalStack or an AWS
// account:
//
//	bash localstack/emulators.sh start
//	eval "$(bash localstack/emulators.sh env)"
//	SKEIN_REQUIRE_EMULATORS=1 go test -tags integration -count=1 ./integration/...
//
// Without SKEIN_EMULATORS=1 the tests skip (with SKEIN_REQUIRE_EMULATORS=1
// they fail instead). Every test creates its own table, queue, dead-letter
// queue and bucket, and deletes them when it ends.
//
// The chaos suite (chaos_*_test.go, RELIABILITY.md) runs many runs of a
// mixed workflow under SIGKILLs, redeliveries and injected DynamoDB and S3
// faults (TestChaosLambda), and on the local world under SIGKILLed worker
// processes (TestChaosLocalWorld, which needs no emulators), then checks
// their logs and step bodies against its invariants. `make chaos` runs it
// long.
package integration
