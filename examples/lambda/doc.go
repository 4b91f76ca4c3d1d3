// Command lambda is the Lambda bootstrap of Skein's own stack
// (template.yaml): the demo's workflows served by skeinlambda.Start, one
// binary for both functions. SKEIN_HANDLER picks the handler: "flow", the
// SQS-triggered flow handler, or "webhook", the webhook handler behind a
// Function URL.
//
// Build it as Lambda runs it (provided.al2023, arm64):
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap ./examples/lambda
//
// or let `sam build` do it from template.yaml. `skein init` writes a project
// of your own with the same shape.
package main
