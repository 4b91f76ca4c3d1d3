// Command lambda is Skein's AWS Lambda bootstrap: one binary for both
// functions of template.yaml. SKEIN_HANDLER picks the handler: "flow", the
// SQS-triggered flow handler, or "webhook", the webhook handler behind a
// Function URL. The World is dynamoworld (DynamoDB, SQS, S3 streams) on the
// resources the environment names; the registry is the demo's (replace it
// with yours).
//
// Build it as Lambda runs it (provided.al2023, arm64):
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap ./examples/lambda
//
// or let `sam build` do it from template.yaml.
package main
