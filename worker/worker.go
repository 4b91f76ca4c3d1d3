package worker

import (
	"net/http"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/sdk"
)

// the schedule's name
const AttrSchedule = sdk.AttrSchedule

// the firing's time, RFC 3339 UTC
const AttrScheduledTime = sdk.AttrScheduledTime

// EngineOptions tunes the engine; zero fields take the engine's defaults.
// It is Config.Engine (and the Lambda handler's Config.Worker.Engine).
//
// Its fields:
//   - InlineConcurrency bounds the steps one invocation runs as goroutines; the excess is queued for other workers (default 16).
//   - RunLeaseTTL is the per-run lease a continuation holds while it runs the workflow, renewed every third of it as it goes (default 30s).
//   - StepLeaseTTL is a step attempt's exclusive lease (a compensation attempt's too), renewed every third of it while it runs (default 1m).
//   - MaxSlice bounds how long workflow code may run between two calls of the workflow API (default 30s): code that blocks on anything else (a channel, a mutex, time.Sleep, a long loop) for longer fails its run with REPLAY_TIMEOUT, and the goroutine it blocks is abandoned (see Determinism in the workflow package doc).
//   - MaxDeliveries fails a run whose message was delivered more often (MAX_DELIVERIES_EXCEEDED; default 48).
//   - MaxInterruptions bounds how often a step attempt may be interrupted by the loss of its executor (a worker killed or cut off mid-step) before the step fails with STEP_EXECUTOR_LOST (default 10).
//   - HoldRetryDelay is how long a run held by a replay divergence waits before it is replayed again (default 1m), doubling with each hold in a row up to HoldRetryLimit (default 1h).
//   - HoldRetryLimit: see HoldRetryDelay.
//   - LogCacheBytes bounds the run logs kept in memory between a run's invocations in this process, so that the next one loads only what was appended since (default 32 MiB of payloads; negative keeps none).
//   - TracerProvider makes OpenTelemetry spans: skein.message per queue message, skein.run per run session and skein.step per step attempt (default: OpenTelemetry's global provider).
//   - Metrics, when set, counts runs and steps as their events commit (see Metrics).
type EngineOptions = engine.Options

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
//
// Its fields:
//   - Name identifies the schedule in its runs' idempotency keys: unique among the schedules of a World, and kept across deploys.
//   - Expr is a cron expression or a fixed rate ("0 8 * * MON-FRI", "@daily", "@every 5m", "rate(1 hour)").
//   - TimeZone is the IANA name of the zone a cron expression's times are in (default UTC).
//   - Workflow is the name of the workflow to start.
//   - Input is the workflow's input, encoded as JSON once, by worker.New, which refuses one that does not decode into the workflow's input type.
//   - CatchUp is how far back a starting Worker looks for a firing missed while no worker ran: the latest firing in (now-CatchUp, now] starts its run (a no-op if another worker started it); older missed firings are skipped. Zero (the default) catches up on none.
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

// Config configures a Worker, and a Processor (NewProcessor reads World,
// Registry, Logger, Engine, Version, Versions and Inbox).
//
// Its fields:
//   - World is the World whose runs the worker executes (required).
//   - Consumer receives the World's queue (default: the World itself, when it implements world.Consumer, as localworld does).
//   - Registry holds the workflows and steps it runs (required).
//   - Concurrency is the number of messages handled at once (default 8).
//   - Logger receives the worker's logs (default: discarded).
//   - WebhookAddr, when set (e.g. "127.0.0.1:0"), serves the webhook handler there under workflow.WebhookPath.
//   - Visibility hides a received message from other receivers, extended every third of it while the message is handled (default 30s).
//   - StopTimeout bounds how long Run waits, once its context has ended, for the messages in flight (default 10s): past it, Run returns an error matching context.DeadlineExceeded, leaving the steps that ignore their context to run on in their goroutines (see Run).
//   - Engine tunes the engine (see EngineOptions).
//   - Version is the code version of this worker: recorded on the runs its Client starts and on the child runs its workflows start (default: the VCS revision the program was built from, as client.Config.Version).
//   - Versions, when set, says which runs' versions this executor runs: a message of a run of another version goes back to the queue, for an executor that accepts it, without counting as a failed delivery, and a warning names the version.
//   - Schedules are fired by the Worker while it runs: each firing starts one run, keyed by the schedule's name and the scheduled time (see Schedule).
//   - Inbox holds the webhook requests too large for a queue message that a QueuedWebhookHandler put there (nil: such a delivery is dropped, and logged).
type Config = sdk.WorkerConfig

// NewProcessor returns a Processor for cfg's World, Registry, Logger,
// Engine, Version, Versions and Inbox. The options are Skein's own (its
// wiring and tests); callers pass none.
func NewProcessor(cfg Config, opts ...knobs.Option) (*Processor, error) {
	return sdk.NewProcessor(cfg, opts...)
}

// New returns a Worker for cfg. With WebhookAddr set it starts
// listening at once (so WebhookURL is known); Run serves. The options are
// Skein's own (its wiring and tests); callers pass none.
func New(cfg Config, opts ...knobs.Option) (*Worker, error) {
	return sdk.NewWorker(cfg, opts...)
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
// (Config.Inbox).
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
