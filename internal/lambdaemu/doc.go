// Package lambdaemu runs a real Lambda bootstrap binary the way AWS Lambda does, without Docker and
// without AWS: a Lambda Runtime API server of ours, an execution environment that execs the bootstrap
// against it with real deadlines, and an SQS event source mapping (ESM) that polls a queue, builds
// events.SQSEvent exactly as Lambda does and settles each batch as AWS documents.
//
// # Pieces
//
//   - [RuntimeAPI] serves the Lambda Runtime API (2018-06-01) on 127.0.0.1 for one execution
//     environment: GET /runtime/invocation/next, POST /runtime/invocation/{id}/response and /error,
//     POST /runtime/init/error.
//   - [Function] is one execution environment: it execs the bootstrap with AWS_LAMBDA_RUNTIME_API
//     pointing at its own RuntimeAPI and the function's environment, runs one invocation at a time with
//     deadline = delivery + Timeout, kills the process on a timeout (the next invocation is a cold
//     start), detects crashes, and measures cold starts (process start to the first /next).
//   - [Mapping] is the event source mapping read from template.yaml (the template stays the source of
//     truth): batch size and window, FunctionResponseTypes, ScalingConfig.MaximumConcurrency, the
//     function's timeout, memory and environment, and the queue's visibility timeout and redrive policy,
//     with !Ref resolved to parameter defaults (or overrides) and !FindInMap through Mappings.
//   - [ESM] polls SQS with up to MaximumConcurrency concurrent batches, each in its own [Function],
//     and settles every batch with [Settle]; [ESM.Drain] waits for the queue to empty. [ESM.Kill]
//     SIGKILLs every busy execution environment, [ESM.KillOne] one of them (crash tests, the chaos
//     suite).
//   - [FunctionURL] serves a [Function] over HTTP as a Lambda Function URL (InvokeMode BUFFERED): each
//     request becomes an events.LambdaFunctionURLRequest (payload format 2.0) and the function's response
//     the HTTP response. With AuthType AWS_IAM ([Template.FunctionURLAuth] reads it from the template) it
//     checks each request's SigV4 signature (service lambda, the URL's region, within 15 minutes, by the
//     access key of one of its [Principal]s, recomputed with the AWS SDK's signer over the headers the
//     request signed) and answers 403 without invoking the function when it fails; the caller's ARN
//     reaches the function in requestContext.authorizer.iam, as Lambda passes it.
//   - [ProvisionQueues] creates a queue and its dead-letter queue as the template declares them, so
//     ElasticMQ (or LocalStack, or AWS) moves a message to the DLQ after maxReceiveCount receives.
//
// # Settling a batch
//
// What Lambda does with an SQS batch once the function returns, as AWS documents it for event source
// mappings with and without ReportBatchItemFailures:
//
//   - A function error (an error response, a panic, a crash or a timeout) deletes nothing and changes
//     no visibility: the messages come back when the queue's VisibilityTimeout expires.
//   - Success without ReportBatchItemFailures deletes the whole batch.
//   - Success with ReportBatchItemFailures: an empty or null batchItemFailures (or an empty or null
//     response) deletes the whole batch; an itemIdentifier that is missing, empty or not in the batch, or
//     a response that is not valid JSON, fails the whole batch (nothing is deleted); otherwise every
//     message not listed is deleted.
//
// What is not emulated: Lambda's own poller scaling (the ESM runs exactly MaximumConcurrency pollers,
// default 5 when unset), back-off after errors, throttling, recursive-loop detection, and the
// function's IAM role (the bootstrap runs with the test's credentials), and for Function URLs the IAM
// policy evaluation behind lambda:InvokeFunctionUrl (a Principal is allowed, any other key is not),
// CORS, and response streaming.
package lambdaemu
