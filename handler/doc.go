// Package handler is Skein's Lambda boundary: the flow function's SQS
// handler and the webhook function's HTTP handler, over any world.World
// (dynamoworld on AWS; localworld in tests).
//
// A Lambda main does not wire it by hand: skeinlambda.Start(registry) reads
// the environment (ConfigFromEnv), builds the World on the stack's table,
// queue and bucket, and serves NewSQS or NewWebhook as SKEIN_HANDLER says.
// Use this package directly to serve the handlers on another World or with
// a Config the environment cannot express (skeinlambda.WithHandlerConfig
// covers most of that).
//
// # The flow handler
//
// NewSQS handles each record of an SQS batch, a world.Message, through the
// engine (workflow.Processor). A continuation takes the run lease, replays
// the run and runs its ready steps inline, up to InlineConcurrency at once,
// queuing the excess as messages of up to InlineConcurrency steps each
// (stepId and stepIds). A message with steps executes them (together, as
// one group) and then carries the run on itself when its lease is free; if
// another invocation holds it, that one takes the results in when it lets
// go, so a fan-out needs no continuation messages. Records of different
// runs, and step messages, run concurrently (up to Config.Concurrency);
// continuations of one run in a batch, one after the other.
//
// Failures are reported per message in BatchItemFailures (the event source
// mapping needs FunctionResponseTypes: [ReportBatchItemFailures]); the
// handler never fails a batch as a whole. What is acknowledged, what is
// retried and what is dead-lettered is documented on NewSQS.
//
// # Time budget
//
// The invocation's deadline comes from its context. The engine starts no
// inline step after deadline-TimeBudgetMargin and continues the run in a new
// message instead; a step that is still running at deadline-ReturnMargin is
// cancelled, its message reported failed, and the handler answers in time.
// That message comes back after the queue's visibility timeout (or, with
// Config.Queue, once the step's lease has expired), and the step re-runs.
//
// # Logs
//
// Every record the handlers and the engine log carries the Lambda request
// ID ("requestId"); the handlers' records also carry the message ID, run ID
// and step ID ("messageId", "runId", "stepId") and the receive count
// ("attempt"). ConfigFromEnv logs JSON lines to stdout in Lambda's JSON log
// shape.
package handler
