package worker

import (
	"net/http"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/sdk"
)

// the schedule's name
const AttrSchedule = sdk.AttrSchedule

// the firing's time, RFC 3339 UTC
const AttrScheduledTime = sdk.AttrScheduledTime

// EngineOptions tunes the engine; zero fields take the engine's defaults.
type EngineOptions = sdk.EngineOptions

// Inbox keeps the queued webhook requests too large for a queue message,
// from the QueuedWebhookHandler that accepts them to the Processor that
// commits them (dynamoworld.World keeps them in its bucket, under
// skein/inbox/). What it returns is checked against the digest the queue
// message carries.
//
// Its methods (internal/sdk documents each in full):
//
//   - DeleteDelivery removes it; a missing one is not an error.
//   - GetDelivery returns what PutDelivery stored under id, or an error wrapping world.ErrNotFound.
//   - PutDelivery stores a delivery's request under its ID.
type Inbox = sdk.Inbox

// Metrics receives measurements of runs and steps, each once its event is
// committed. Implementations must be safe for concurrent use and must not
// block. The names it receives: the counters RunsStarted (a run began, or
// a held run resumed), RunsCompleted, RunsFailed, RunsHeld (a replay
// divergence stopped a run), StepAttempts (an attempt began),
// StepAttemptFailures (an attempt failed, retried or not), StepsFailed (a
// step failed for good), MessagesRefused (messages an executor pinned to
// versions sent back for another executor: steadily above zero, runs wait
// for a version no one runs) and KeyUnavailable (messages sent back because
// the executor's keys could not open their run's payloads); the
// distributions StepLatency (a step's first start to its completion),
// RunDuration (a run's creation to its end) and, from the Lambda handler,
// QueueLag (a queue message's due time to its receipt).
//
// Its methods (internal/sdk documents each in full):
//
//   - Count adds n to the counter name.
//   - Duration records one observation of the distribution name.
type Metrics = sdk.Metrics

// Processor handles the queue messages of a World's runs: the part of a
// worker (or of a Lambda handler) that does the work.
//
// Its methods (internal/sdk documents each in full):
//
//   - Client returns a client over the processor's World and Registry.
//   - Close stops the workflows the processor keeps alive.
//   - Process handles one queue message body, delivered for the attempt-th time (0 when unknown).
type Processor = sdk.Processor

// ProcessorConfig configures a Processor.
type ProcessorConfig = sdk.ProcessorConfig

// Schedule starts runs of a workflow on a cron schedule or at a fixed rate.
// A Worker given schedules (Config.Schedules) fires them itself; on
// AWS an EventBridge Scheduler schedule sends a schedule message to the
// work queue instead (see package schedule and the README).
//
// Each firing starts one run whose idempotency key is
// "schedule:<name>:<RFC 3339 UTC time>" (the schedule's Name and the scheduled time),
// and whose attributes record the schedule (AttrSchedule) and the time
// (AttrScheduledTime): two workers on one store, or a worker restarted,
// start one run per firing.
type Schedule = sdk.Schedule

// VersionFilter says which runs' code versions an executor runs.
//
// Its methods (internal/sdk documents each in full):
//
//   - Accepts reports whether runs of version (RunInfo.Version; "" for a run that recorded none) may run here.
type VersionFilter = sdk.VersionFilter

// Versions is a VersionFilter accepting the versions it lists (an empty
// list, as a nil filter, accepts every version). List ""
// too to run the runs that recorded no version (those started before
// versions were configured, or by a client built without VCS data).
//
// Its methods (internal/sdk documents each in full):
//
//   - Accepts reports whether version is in vs.
type Versions = sdk.Versions

// Worker runs workflows locally: it consumes a World's queue with a pool of
// goroutines and, optionally, serves webhooks.
//
// Its methods (internal/sdk documents each in full):
//
//   - Client returns a client over the worker's World and Registry.
//   - Run consumes messages until ctx is cancelled.
//   - WebhookURL returns the base URL webhooks are served at ("" without WebhookAddr).
type Worker = sdk.Worker

// Config configures a Worker.
type Config = sdk.WorkerConfig

// NewProcessor returns a Processor for cfg.
func NewProcessor(cfg ProcessorConfig) (*Processor, error) {
	return sdk.NewProcessor(cfg)
}

// New returns a Worker for cfg. With WebhookAddr set it starts
// listening at once (so WebhookURL is known); Run serves.
func New(cfg Config) (*Worker, error) {
	return sdk.NewWorker(cfg)
}

// QueuedWebhookHandler returns WebhookHandler for a process that only reads
// the World and sends to its queue (a public webhook function): it answers
// as WebhookHandler does (404 for an unknown, disposed or non-webhook token
// or one whose run has ended, the webhook's static response, 202, or the
// response a step sends), but instead of committing a request to the run it
// enqueues it, and a Processor commits it: it looks the hook up by the
// token again, and appends the request once, however often the message is
// delivered. A 202 thus says that the request is queued. A request the
// Processor finds no active hook for (disposed meanwhile, or the run
// ended) is dropped, with a warning in the Processor's log. A request
// whose message would exceed 192 KiB goes to inbox (nil: the message is
// sent as it is), which the Processor must be given too
// (ProcessorConfig.Inbox).
func QueuedWebhookHandler(c *client.Client, inbox Inbox) http.Handler {
	return sdk.QueuedWebhookHandler(c, inbox)
}

// WebhookHandler returns the HTTP handler resuming webhooks: a POST, PUT
// or PATCH request to workflow.WebhookPath+token is delivered to the webhook holding
// token. OPTIONS answers 204 and any other method 405, both with an Allow
// header (POST, PUT, PATCH, OPTIONS), before the token is looked up and without
// delivering anything. An unknown, disposed or non-webhook token, or one
// whose run has ended, answers 404 with an empty body. A body over
// three quarters of the World's MaxPayload (768 KiB by default: the body
// is recorded base64-encoded), or a request its run's limits refuse
// (world.Limits: the request as recorded, method, URL and headers
// included, over MaxPayload, so a body of 768 KiB less a few hundred
// bytes at most; the run's bytes over MaxRunBytes; its events at
// MaxEvents), answers 413 with a problem+json body (code
// LIMIT_EXCEEDED); one that does not arrive within 10 seconds
// answers 408. Neither delivers anything. What it logs never holds a
// token, only its digest ("sha256:" and 12 hex digits).
func WebhookHandler(c *client.Client) http.Handler {
	return sdk.WebhookHandler(c)
}
