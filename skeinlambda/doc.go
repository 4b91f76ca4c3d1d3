// Package skeinlambda serves a registry of workflows on AWS Lambda in one
// call. A function's main is
//
//	func main() {
//		reg := workflow.NewRegistry()
//		if err := reg.Register(MyWorkflow, MyStep); err != nil {
//			log.Fatal(err)
//		}
//		skeinlambda.Start(reg)
//	}
//
// Start reads the environment the stack's template gives the function
// (handler.ConfigFromEnv: SKEIN_HANDLER, SKEIN_TABLE, SKEIN_QUEUE_URL,
// SKEIN_BUCKET, ...), loads the AWS SDK configuration, builds a
// dynamoworld.World on the stack's table, queue and bucket, and serves the
// handler SKEIN_HANDLER names: "flow", the SQS-triggered flow handler
// (handler.NewSQS), "webhook", the HTTP handler behind the webhook's public
// Function URL (handler.NewWebhook), or "api", the HTTP API behind a
// Function URL with AWS_IAM auth (handler.NewAPI). One binary serves every
// function of the stack.
//
// Work that would otherwise fall on the first invocation is done during
// Lambda's init phase, which runs at full CPU: the SDK configuration is
// loaded, the clients are built, and, when a client will talk TLS against
// the system's root certificates, those are parsed before the first request.
//
// The DynamoDB, SQS, S3 and KMS clients retry throttling, 5xx answers and
// network errors with the SDK's backoff, but only while the request's
// context leaves the time: a retry whose backoff would leave its attempt
// less than 100 ms before the context's deadline is not made, and the
// request fails at once with its last attempt's error (which it wraps),
// instead of sleeping until the context ends. A handler near its deadline
// thus learns what failed in time to answer.
//
// When the environment points the SDK at emulators (AWS_ENDPOINT_URL or
// AWS_ENDPOINT_URL_DYNAMODB, as LocalStack and the offline test stack set
// them), the clients accept the emulators' answers, which lack some of the
// checksums AWS sends; SKEIN_S3_PATH_STYLE=1 addresses the bucket in the
// path, as S3 emulators need.
//
// Options override what the environment does not say: the AWS
// configuration (WithAWSConfig), and the handler's and the World's
// configurations before they are used (WithHandlerConfig, whose
// handler.Config holds the logger, the engine's options and the tracer
// provider; WithWorldConfig).
// New builds the handler without serving it, for tests and for a main that
// wraps the handler itself.
//
// The package links the AWS SDK and aws-lambda-go; the workflow code a
// registry holds does not need to (workflow/ and world/ import no AWS
// code), so the same workflows run on the local world in tests.
package skeinlambda
