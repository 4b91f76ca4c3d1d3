// Package handler is Skein's Lambda boundary: the flow function's SQS
// handler and the webhook function's HTTP handler, over any world.World
// (dynamoworld on AWS; localworld in tests).
//
//	cfg, err := handler.ConfigFromEnv(nil) // SKEIN_HANDLER, SKEIN_TABLE, ...
//	cfg.World, cfg.Registry = w, registry
//	switch cfg.Kind {
//	case handler.KindFlow:
//		h, err := handler.NewSQS(cfg)
//		...
//		lambda.Start(h)
//	case handler.KindWebhook:
//		h, err := handler.NewWebhook(cfg)
//		...
//		lambda.Start(h)
//	}
//
// # The flow handler
//
// NewSQS handles each record of an SQS batch, a world.Message, through the
// engine (workflow.Processor): a continuation replays the run and runs its
// ready steps inline, up to InlineConcurrency at once, queuing the excess
// as messages that carry a step ID; a message with a step ID executes that
// step and queues a continuation. Records of different runs run
// concurrently; continuations of one run, one after the other.
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
