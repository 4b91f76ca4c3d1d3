// Package handler is Skein's Lambda boundary: the flow function's SQS
// handler, the webhook function's HTTP handler and the HTTP API, over any
// world.World (dynamoworld on AWS; localworld in tests).
//
// A Lambda main does not wire it by hand: skeinlambda.Start(registry) reads
// the environment (ConfigFromEnv), builds the World on the stack's table,
// queue and bucket, and serves NewSQS, NewWebhook or NewAPI as
// SKEIN_HANDLER says.
// Use this package directly to serve the handlers on another World or with
// a Config the environment cannot express (skeinlambda.WithHandlerConfig
// covers most of that).
//
// # The flow handler
//
// NewSQS handles each record of an SQS batch, a world.Message, through the
// engine (worker.Processor). A continuation takes the run lease, replays
// the run and runs its ready steps inline, up to InlineConcurrency at once,
// queuing the excess as messages of up to InlineConcurrency steps each
// (stepId and stepIds). A message with steps executes them (together, as
// one group) and then carries the run on itself when its lease is free; if
// another invocation holds it, that one takes the results in when it lets
// go, so a fan-out needs no continuation messages. Records of different
// runs, and step messages, run concurrently (up to Config.Worker.Concurrency);
// continuations of one run in a batch, one after the other.
//
// Failures are reported per message in BatchItemFailures (the event source
// mapping needs FunctionResponseTypes: [ReportBatchItemFailures]); the
// handler never fails a batch as a whole. What is acknowledged, what is
// retried and what is dead-lettered is documented on NewSQS.
//
// # The HTTP API
//
// NewAPI (SKEIN_HANDLER=api) serves a JSON API under /v1 to start runs of
// the registry's workflows by name, read their status, result and streams,
// cancel them and resume hooks: NewAPIServer lists the routes, and
// docs/api/openapi.yaml describes them (the function serves it at
// GET /v1/openapi.yaml). Errors are problem details (RFC 9457) with the
// status of the world's sentinel errors. It checks an input against the
// workflow's input type before it creates a run (sdk.StartJSON),
// and an idempotency key makes a start safe to retry.
//
// # Who may call the functions
//
// The API starts and cancels any run, so its callers must be known: its
// Function URL has AuthType AWS_IAM. Lambda then checks each request's
// SigV4 signature (service lambda) and the caller's permission
// lambda:InvokeFunctionUrl before the function runs, and refuses anything
// else with 403: no code of ours decides who gets in, the handler only logs
// the caller's ARN. Callers sign with the credentials they already have
// (curl --aws-sigv4, the AWS SDKs' signers, IAM roles of other services).
// A Function URL is free beyond the invocation and is part of the
// function; API Gateway with IAM authorization would check the same
// signature but bill every request and add an API, a stage and a route to
// deploy, and is worth it only for what it adds (usage plans, custom
// domains, WAF), none of which the API needs.
//
// The webhook function's Function URL has AuthType NONE, by design: a
// webhook is called by third parties (payment providers, chat tools, form
// services) that cannot sign with SigV4. Its credential is the token in
// the path, 132 random bits derived from a per-run secret, checked against
// the run's active hooks; a request without a live token gets 404 and
// delivers nothing. Hence the API does not resume webhooks, and the
// webhook function resumes nothing but webhooks.
//
// # Time budget
//
// The invocation's deadline comes from its context. The engine starts no
// inline step after deadline-TimeBudgetMargin and continues the run in a new
// message instead; nor does the handler start a message of background steps
// whose turn comes after it: the message is reported failed
// and released at once (Config.Queue), for an invocation with the time to
// run them. A step that is still running at deadline-DefaultReturnMargin is
// cancelled, its message reported failed, and the handler answers in time.
// That message comes back after the queue's visibility timeout (or, with
// Config.Queue, once the step's lease has expired), and the step re-runs.
// The releases that hide such messages (Config.Queue) run at once and end
// by deadline-DefaultReturnMargin/4, whether the queue has answered or not (the
// handler waits for them no longer): an answer after the deadline would
// fail the whole batch. A record's fate is
// decided once: a record given up at the deadline stays as the answer
// reported it, and its step, should it return later, releases nothing
// (its receipt may belong to another invocation's delivery by then). The
// clients skeinlambda builds make no SDK retry that would end past their
// request's deadline.
//
// # Logs
//
// Every record the handlers and the engine log carries the Lambda request
// ID ("requestId"); the handlers' records also carry the message ID, run ID
// and step ID ("messageId", "runId", "stepId") and the receive count
// ("attempt"). ConfigFromEnv logs JSON lines to stdout in Lambda's JSON log
// shape.
package handler
