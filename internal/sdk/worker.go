package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/world"
	"go.opentelemetry.io/otel/trace"
)

// EngineOptions tunes the engine; zero fields take the engine's defaults.
type EngineOptions struct {
	// InlineConcurrency bounds the steps one invocation runs as goroutines;
	// the excess is queued for other workers (default 16).
	InlineConcurrency int
	// RunLeaseTTL is the per-run lease a continuation holds while it runs
	// the workflow, renewed every third of it as it goes; a continuation
	// whose process died blocks the run until it expires (default 30s). A
	// continuation that loses its lease (a renewal refused, or failing for
	// two thirds of it) stops at once: its steps in flight see their context
	// cancelled and it commits nothing more.
	RunLeaseTTL time.Duration
	// StepLeaseTTL is a step attempt's exclusive lease (a compensation
	// attempt's too), renewed while it runs; a step whose worker died
	// re-runs once it expires (default 1m), or at once when a local worker
	// restarts on the same store.
	StepLeaseTTL time.Duration
	// RunPollInterval is how often a running step checks whether its run
	// has ended, to cancel its context (default 1s).
	RunPollInterval time.Duration
	// EventPollInterval is how often an invocation waiting on long steps
	// looks for hook payloads and other events (default 1s).
	EventPollInterval time.Duration
	// MaxInvocation bounds one invocation without a context deadline
	// (default 10m); BudgetMargin is kept free before a deadline (default 5s;
	// the Lambda handler sets it from its own TimeBudgetMargin).
	MaxInvocation, BudgetMargin time.Duration
	// MaxSlice bounds how long workflow code may run between two calls of
	// the workflow API (default 30s): code that blocks on anything else (a
	// channel, a mutex, time.Sleep, a long loop) for longer fails its run
	// with REPLAY_TIMEOUT, and the goroutine it blocks is abandoned (see
	// Determinism in the package doc).
	MaxSlice time.Duration
	// Linger is how long an invocation waits in process for a close timer
	// (default 250ms; negative: never).
	Linger time.Duration
	// MaxDeliveries fails a run whose message was delivered more often
	// (default 48). A message received three times is sent again as a new
	// message (acknowledging the old), so that a queue's receive limit
	// (SQS's maxReceiveCount) never dead-letters a run whose executors
	// died; MaxDeliveries counts the deliveries of both. Receives of a
	// message that executors of other versions sent back (Versions) may be
	// theirs: at the limit such a message is sent again counting one.
	MaxDeliveries int
	// MaxInterruptions bounds how often a step attempt may be interrupted by
	// the loss of its executor (a worker killed or cut off mid-step). Such
	// an attempt runs again as the same attempt, without using the step's
	// retries; a step interrupted more often fails with STEP_EXECUTOR_LOST
	// (default 10).
	MaxInterruptions int
	// MaxQueueDelay is the longest delay one queue message carries; longer
	// waits chain hops (default 15m, the SQS limit). Tests shorten it.
	MaxQueueDelay time.Duration
	// BackgroundDelay delays the queue messages of the steps beyond
	// InlineConcurrency; meanwhile the invocation that queued them may run
	// them itself as its slots free up, saving the queue round trips of
	// short steps. Negative means no delay. A Worker defaults to 50ms; a
	// Processor to none (SQS delays are whole seconds).
	BackgroundDelay time.Duration
	// HoldRetryDelay is how long a run held by a replay divergence waits
	// before it is replayed again (default 1m), doubling with each hold in
	// a row up to HoldRetryLimit (default 1h).
	HoldRetryDelay, HoldRetryLimit time.Duration
	// TracerProvider makes OpenTelemetry spans: skein.message per queue
	// message, skein.run per run session and skein.step per step attempt,
	// with the run, workflow, step and attempt as attributes. A run started
	// under a span (Client.Start's context) records its trace context, and
	// every session and step of the run, in whatever process or invocation,
	// joins that trace; the message span, in the handling process's trace,
	// is linked. Default: OpenTelemetry's global provider (a no-op unless
	// the program sets one).
	TracerProvider trace.TracerProvider
	// Metrics, when set, counts runs and steps as their events commit: the
	// Metric names say what. The Lambda handler sends them to CloudWatch in
	// Embedded Metric Format.
	Metrics Metrics
	// VersionRetryDelay is how long a message of a run whose version the
	// executor does not accept (see worker.ProcessorConfig.Versions) waits in the
	// queue for another executor (default 1s), doubling each time it is
	// left again up to VersionRetryLimit (default 1m).
	VersionRetryDelay, VersionRetryLimit time.Duration
	// LogCacheBytes bounds the run logs kept in memory between a run's
	// invocations in this process, so that the next one (a hook payload's
	// wake-up, say) loads only what was appended since instead of the whole
	// log (default 32 MiB of payloads; negative keeps none). With its log,
	// a run's workflow is kept alive where it waits (up to 64 runs, a
	// goroutine each, counted as 64 KiB each), so that the next invocation
	// hands it what is new instead of replaying it from its start; a
	// Worker stops them when Run returns.
	LogCacheBytes int
}

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
type Metrics interface {
	// Count adds n to the counter name.
	Count(name string, n int)
	// Duration records one observation of the distribution name.
	Duration(name string, d time.Duration)
}

// ProcessorConfig configures a Processor.
type ProcessorConfig struct {
	World    world.World
	Registry *Registry
	// Logger receives the processor's logs (default: discarded).
	Logger *slog.Logger
	Now    func() time.Time
	Engine EngineOptions
	// Version is the code version of this executor, recorded on the child
	// runs its workflows start (default: as client.Config.Version).
	Version string
	// Versions, when set, says which runs' versions this executor runs: a
	// message of a run of another version goes back to the queue, for an
	// executor that accepts it, without counting as a failed delivery, and
	// a warning names the version. Nil (or an empty Versions) runs every
	// run. See the "Changing workflows" guide.
	Versions VersionFilter
	// Inbox holds the webhook requests too large for a queue message that a
	// QueuedWebhookHandler put there; the Processor reads, checks and
	// deletes them. Nil: such a delivery is dropped (and logged).
	Inbox Inbox
}

// Processor handles the queue messages of a World's runs: the part of a
// worker (or of a Lambda handler) that does the work.
type Processor struct {
	eng    *engine.Engine
	client *Client
	log    *slog.Logger
	inbox  Inbox
}

// NewProcessor returns a Processor for cfg.
func NewProcessor(cfg ProcessorConfig) (*Processor, error) {
	if cfg.Registry == nil {
		return nil, errors.New("worker: Registry is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	version, err := resolveVersion("worker: Version", cfg.Version)
	if err != nil {
		return nil, err
	}
	accept, err := acceptFunc("worker: Versions", cfg.Versions)
	if err != nil {
		return nil, err
	}
	if accept != nil && !accept(version) {
		// The runs it starts (children, schedules, its client's) would
		// record a version it then refuses for good.
		return nil, fmt.Errorf("workflow: Versions does not accept this executor's own version %q (Version, or the build's): "+
			"the runs it starts would wait for another executor; set Version to one of its Versions", version)
	}
	client, err := NewClient(ClientConfig{World: cfg.World, Registry: cfg.Registry, Logger: cfg.Logger, Now: cfg.Now, Version: version})
	if err != nil {
		return nil, err
	}
	o := cfg.Engine
	eng, err := engine.New(engine.Config{
		World: cfg.World, Registry: engineRegistry{cfg.Registry}, Logger: cfg.Logger, Now: cfg.Now,
		InlineConcurrency: o.InlineConcurrency, RunLeaseTTL: o.RunLeaseTTL, StepLeaseTTL: o.StepLeaseTTL, RunPollInterval: o.RunPollInterval,
		EventPollInterval: o.EventPollInterval, MaxInvocation: o.MaxInvocation, BudgetMargin: o.BudgetMargin, MaxSlice: o.MaxSlice,
		Linger: o.Linger, MaxDeliveries: o.MaxDeliveries, MaxInterruptions: o.MaxInterruptions, Metrics: o.Metrics, TracerProvider: o.TracerProvider, BackgroundDelay: max(o.BackgroundDelay, 0), MaxQueueDelay: o.MaxQueueDelay,
		HoldRetryDelay: o.HoldRetryDelay, HoldRetryLimit: o.HoldRetryLimit, LogCacheBytes: o.LogCacheBytes,
		AcceptVersion: accept, VersionRetryDelay: o.VersionRetryDelay, VersionRetryLimit: o.VersionRetryLimit,
		EncodeError: cfg.Registry.encode,
		StepContext: func(ctx context.Context) context.Context { return context.WithValue(ctx, clientKey{}, client) },
	})
	if err != nil {
		return nil, err
	}
	return &Processor{eng: eng, client: client, log: cfg.Logger, inbox: cfg.Inbox}, nil
}

// Close stops the workflows the processor keeps alive, waiting where their
// runs' last messages left them, so that the runs' next messages hand them
// what is new instead of replaying them (a goroutine each, see
// EngineOptions.LogCacheBytes). The processor still handles messages after
// it, replaying each run's workflow. A Worker closes its processor when Run
// returns; call it when done with a Processor of your own (a test checking
// for leaked goroutines, say).
func (p *Processor) Close() { p.eng.Close() }

// Client returns a client over the processor's World and Registry.
func (p *Processor) Client() *Client { return p.client }

// Process handles one queue message body, delivered for the attempt-th time
// (0 when unknown). Nil means acknowledge it; an error for which
// IsPermanent is true means it can never succeed (acknowledge and report
// it); any other error means deliver it again later. A panic while handling
// the message (workflow and step code cannot cause one: the engine recovers
// theirs) is logged and returned as an error, never passed on: the message
// is delivered again, and a run whose messages keep failing ends with
// MAX_DELIVERIES_EXCEEDED, with the process and its other runs unharmed.
//
// A schedule message (see package schedule: what an EventBridge Scheduler
// schedule sends) starts its firing's run, keyed by the schedule's name and
// the scheduled time, so a message delivered twice starts one run; one
// that does not decode is a permanent error. One naming a workflow the
// Registry does not hold is logged as an error and still starts its run,
// which fails as not registered (RUNTIME_ERROR), where listing runs shows
// it.
//
// A webhook delivery message (IsWebhookDelivery: what a
// QueuedWebhookHandler enqueues) is committed to the active hook holding
// its token, once however often it is delivered; one that no active hook
// can take (disposed, or its run ended), or whose request does not check
// out, is a permanent error, logged as a dropped delivery.
func (p *Processor) Process(ctx context.Context, body []byte, attempt int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("workflow: panic while handling a message", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("workflow: panic while handling a message: %v", r)
		}
	}()
	if schedmsg.IsMessage(body) {
		return p.processFiring(ctx, body)
	}
	if IsWebhookDelivery(body) {
		return p.processDelivery(ctx, body)
	}
	msg, err := world.DecodeMessage(body)
	if err != nil {
		return &engine.PermanentError{Reason: "malformed message", Err: err}
	}
	return p.eng.HandleDelivery(ctx, msg, attempt)
}

// IsPermanent reports whether a Process error means the message must not be
// retried.
func IsPermanent(err error) bool { return engine.IsPermanent(err) }

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	World world.World
	// Consumer receives the World's queue (default: the World itself, when
	// it implements world.Consumer, as localworld does).
	Consumer world.Consumer
	Registry *Registry
	// Concurrency is the number of messages handled at once (default 8).
	Concurrency int
	// Logger receives the worker's logs (default: discarded). Set it: a
	// run this worker cannot execute (its code or its key missing, its
	// version not accepted) is logged at WARN or ERROR, and nowhere else.
	Logger *slog.Logger
	Now    func() time.Time
	// WebhookAddr, when set (e.g. "127.0.0.1:0"), serves the webhook
	// handler there under WebhookPath.
	WebhookAddr string
	// Visibility hides a received message from other receivers; the Worker
	// extends it every third of its length while the message is handled
	// (default 30s), so a message stays hidden only while its worker
	// lives: one whose worker died (kill -9, a crash) comes back within
	// Visibility, and its run moves on once the leases of the dead
	// worker have expired (EngineOptions.RunLeaseTTL, StepLeaseTTL).
	Visibility time.Duration
	// StopTimeout bounds how long Run waits, once its context has ended,
	// for the messages in flight (default 10s): past it, Run returns an
	// error matching context.DeadlineExceeded, leaving the steps that
	// ignore their context to run on in their goroutines (see Run).
	StopTimeout time.Duration
	// PollWait is how long a receive waits for a message (default 1s).
	PollWait time.Duration
	// RetryDelay is the delay before a failed message is delivered again,
	// given its attempt (default exponential from 100ms to 30s).
	RetryDelay func(attempt int) time.Duration
	Engine     EngineOptions
	// Version is the code version of this worker: recorded on the runs its
	// Client starts and on the child runs its workflows start (default:
	// as client.Config.Version).
	Version string
	// Versions, when set, restricts the worker to the runs of the versions
	// it accepts; a message of another run stays queued for another worker
	// (see worker.ProcessorConfig.Versions). Nil runs every run.
	Versions VersionFilter
	// Schedules are fired by the Worker while it runs: each firing starts
	// one run, keyed by the schedule's name and the scheduled time (see
	// Schedule). worker.New refuses a schedule that does not check out with
	// a *RegistrationError (Kind "schedule").
	Schedules []Schedule
	// ScheduleTick is the longest the Worker waits between two looks at
	// the clock (Now) for due schedules (default 1s); a test whose clock
	// jumps or runs fast shortens it.
	ScheduleTick time.Duration
}

// Worker runs workflows locally: it consumes a World's queue with a pool of
// goroutines and, optionally, serves webhooks.
type Worker struct {
	cfg       WorkerConfig
	p         *Processor
	consumer  world.Consumer
	ln        net.Listener
	running   atomic.Bool
	inflight  atomic.Int64 // messages being handled
	schedules []*compiledSchedule
}

// NewWorker returns a Worker for cfg. With WebhookAddr set it starts
// listening at once (so WebhookURL is known); Run serves.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.World == nil {
		return nil, errors.New("worker: Config.World is required")
	}
	if cfg.Consumer == nil {
		c, ok := cfg.World.(world.Consumer)
		if !ok {
			return nil, errors.New("worker: Config.Consumer is required: the World is not a world.Consumer")
		}
		cfg.Consumer = c
	}
	switch {
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("worker: Config.Concurrency is negative (%d)", cfg.Concurrency)
	case cfg.Concurrency == 0:
		cfg.Concurrency = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Visibility <= 0 {
		cfg.Visibility = world.DefaultVisibility
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = time.Second
	}
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = func(attempt int) time.Duration {
			d := 100 * time.Millisecond
			for i := 1; i < attempt && d < 30*time.Second; i++ {
				d *= 2
			}
			return min(d, 30*time.Second)
		}
	}
	if cfg.Engine.BackgroundDelay == 0 {
		cfg.Engine.BackgroundDelay = 50 * time.Millisecond
	}
	if cfg.ScheduleTick <= 0 {
		cfg.ScheduleTick = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := NewProcessor(ProcessorConfig{World: cfg.World, Registry: cfg.Registry, Logger: cfg.Logger, Now: cfg.Now, Engine: cfg.Engine,
		Version: cfg.Version, Versions: cfg.Versions})
	if err != nil {
		return nil, err
	}
	schedules, err := compileSchedules(cfg.Schedules, cfg.Registry)
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, p: p, consumer: cfg.Consumer, schedules: schedules}
	if cfg.WebhookAddr != "" {
		w.ln, err = net.Listen("tcp", cfg.WebhookAddr)
		if err != nil {
			return nil, fmt.Errorf("workflow: webhook listener: %w", err)
		}
	}
	return w, nil
}

func (w *Worker) now() time.Time { return w.cfg.Now() }

// Client returns a client over the worker's World and Registry.
func (w *Worker) Client() *Client { return w.p.client }

// WebhookURL returns the base URL webhooks are served at ("" without
// WebhookAddr): a webhook's URL is this followed by Webhook.URL().
func (w *Worker) WebhookURL() string {
	if w.ln == nil {
		return ""
	}
	return "http://" + w.ln.Addr().String()
}

// Run consumes messages until ctx is cancelled, then stops receiving,
// cancels the work in flight (its messages are released for redelivery),
// stops the webhook server and returns nil once its goroutines have ended.
//
// Stopping leaves no message hidden: one received as Run stops is given
// back at once, unhandled and uncounted (sent again carrying the
// deliveries before this one, so it counts against neither MaxDeliveries
// nor a queue's dead-letter count), and a dynamoworld receive in flight
// finishes its SQS long poll (up to PollWait) to give back what that
// brings. A process that
// exits before Run returns can leave up to Concurrency messages, and their
// runs, waiting for Visibility.
//
// What it waits for: the step functions it runs see their context
// cancelled, and Run waits for each to return, for up to StopTimeout
// (default 10s). A step that returns after the cancellation has its result
// discarded, not recorded: its attempt counts as lost (shown "+1 lost"),
// and the step runs again when a worker next takes the run on, repeating
// what it did (stream writes included): make steps idempotent, and make
// them return promptly on ctx.Done. Should a step ignore its context past
// StopTimeout, Run stops waiting: it logs how many messages are still in
// flight and returns an error matching context.DeadlineExceeded; their
// goroutines run on while the process lives, no longer keeping their
// messages hidden, which come back within Visibility. Workflow code
// blocked outside the workflow API is not waited for: after a second's
// grace its goroutine is abandoned (see Determinism in the package doc).
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: Worker.Run called twice")
	}
	// The workflows kept alive between their runs' messages stop with it
	// (see EngineOptions.LogCacheBytes).
	defer w.p.Close()
	var wg sync.WaitGroup
	if w.ln != nil {
		mux := http.NewServeMux()
		mux.Handle(WebhookPath, WebhookHandler(w.p.client))
		srv := &http.Server{Handler: logRequests(w.cfg.Logger, mux), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := srv.Serve(w.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.cfg.Logger.Error("workflow: webhook server", "err", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if len(w.schedules) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runSchedules(ctx)
		}()
	}
	for range w.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx)
		}()
	}
	return w.wait(ctx, &wg)
}

// wait waits for Run's goroutines to end, for up to StopTimeout once ctx
// has ended.
func (w *Worker) wait(ctx context.Context, wg *sync.WaitGroup) error {
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
	}
	t := time.NewTimer(w.cfg.StopTimeout)
	defer t.Stop()
	select {
	case <-ended:
		return nil
	case <-t.C:
	}
	n := w.inflight.Load()
	w.cfg.Logger.Warn("workflow: Worker stopped without waiting for the messages still in flight: a step ignores its context",
		"inFlight", n, "stopTimeout", w.cfg.StopTimeout)
	return fmt.Errorf("workflow: Worker.Run: %d messages still in flight %s after the stop: %w", n, w.cfg.StopTimeout, context.DeadlineExceeded)
}
