// Package dynamotest runs dynamoworld against AWS-compatible endpoints in
// tests: the offline emulators (localstack/emulators.sh), LocalStack or an
// AWS account, chosen by the standard environment (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3, AWS_REGION, credentials).
//
// Tests that need the endpoints call Require first. It skips the test unless
// SKEIN_EMULATORS=1; with SKEIN_REQUIRE_EMULATORS=1 a missing setup fails
// the test instead, so that a CI job meant to run them cannot pass by
// skipping. SKEIN_S3_PATH_STYLE=1 selects path-style S3 addressing.
//
// An Injector fails a share of request attempts as AWS would (throttling,
// 500s, 503s, lost answers, transaction conflicts): as SDK middleware for a
// client the test builds (Add), or as an HTTP proxy in front of an emulator
// for a client in another process, such as a Lambda bootstrap (Proxy).
// Meter counts requests and prices them.
package dynamotest
