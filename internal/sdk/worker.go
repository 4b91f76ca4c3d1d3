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

	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/world"
)

// EngineOptions tunes the engine; zero fields take the engine's defaults.
// internal/engine documents each field (worker.EngineOptions is this type).
type EngineOptions = engine.Options

// Metrics receives measurements of runs and steps, each once its event is
// committed (internal/engine documents it; worker.Metrics is this type).
type Metrics = engine.Metrics

// Processor handles the queue messages of a World's runs: the part of a
// worker (or of a Lambda handler) that does the work.
type Processor struct {
	eng    *engine.Engine
	client *Client
	log    *slog.Logger
	inbox  Inbox
}

// NewProcessor returns a Processor for cfg: its World, Registry, Logger,
// Engine, Version, Versions and Inbox (the Worker's other fields are not
// the Processor's).
func NewProcessor(cfg WorkerConfig, opts ...knobs.Option) (*Processor, error) {
	if cfg.Registry == nil {
		return nil, cfgerr.Invalid(errors.New("worker: Config.Registry is required"))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	version, err := resolveVersion("worker: Config.Version", cfg.Version)
	if err != nil {
		return nil, cfgerr.Invalid(err)
	}
	accept, err := acceptFunc("worker: Config.Versions", cfg.Versions)
	if err != nil {
		return nil, cfgerr.Invalid(err)
	}
	if accept != nil && !accept(version) {
		// The runs it starts (children, schedules, its client's) would
		// record a version it then refuses for good.
		return nil, cfgerr.Invalid(fmt.Errorf("worker: Config.Versions does not accept this executor's own version %q (Config.Version, or the build's): "+
			"the runs it starts would wait for another executor; set Version to one of its Versions", version))
	}
	client, err := NewClient(ClientConfig{World: cfg.World, Registry: cfg.Registry, Logger: cfg.Logger, Version: version}, opts...)
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(engine.Config{
		World: cfg.World, Registry: engineRegistry{cfg.Registry}, Logger: cfg.Logger, Options: cfg.Engine,
		AcceptVersion: accept, EncodeError: cfg.Registry.encode,
		StepContext: func(ctx context.Context) context.Context { return context.WithValue(ctx, clientKey{}, client) },
	}, opts...)
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

// The Worker's defaults (one each; the engine's are internal/engine's).
const (
	defaultConcurrency     = 8
	defaultStopTimeout     = 10 * time.Second
	defaultPollWait        = time.Second
	defaultScheduleTick    = time.Second
	defaultBackgroundDelay = 50 * time.Millisecond
)

// WorkerConfig configures a Worker, and a Processor (NewProcessor reads
// World, Registry, Logger, Engine, Version, Versions and Inbox).
type WorkerConfig struct {
	// World is the World whose runs the worker executes (required).
	World world.World
	// Consumer receives the World's queue (default: the World itself, when
	// it implements world.Consumer, as localworld does).
	Consumer world.Consumer
	// Registry holds the workflows and steps it runs (required).
	Registry *Registry
	// Concurrency is the number of messages handled at once (default 8;
	// the Lambda handler's default is 10, the largest SQS batch).
	Concurrency int
	// Logger receives the worker's logs (default: discarded). Set it: a
	// run this worker cannot execute (its code or its key missing, its
	// version not accepted) is logged at WARN or ERROR, and nowhere else.
	Logger *slog.Logger
	// WebhookAddr, when set (e.g. "127.0.0.1:0"), serves the webhook
	// handler there under workflow.WebhookPath.
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
	// Engine tunes the engine (leases, bounds, tracing, metrics).
	Engine EngineOptions
	// Version is the code version of this worker: recorded on the runs its
	// Client starts and on the child runs its workflows start (default:
	// the VCS revision the program was built from, as client.Config.Version).
	Version string
	// Versions, when set, says which runs' versions this executor runs: a
	// message of a run of another version goes back to the queue, for an
	// executor that accepts it, without counting as a failed delivery, and
	// a warning names the version. Nil (or an empty Versions) runs every
	// run. See the "Changing workflows" guide.
	Versions VersionFilter
	// Schedules are fired by the Worker while it runs: each firing starts
	// one run, keyed by the schedule's name and the scheduled time (see
	// Schedule). worker.New refuses a schedule that does not check out with
	// a *RegistrationError (Kind "schedule").
	Schedules []Schedule
	// Inbox holds the webhook requests too large for a queue message that a
	// QueuedWebhookHandler put there; the Processor reads, checks and
	// deletes them. Nil: such a delivery is dropped (and logged).
	Inbox Inbox
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
	// From the knobs (Skein's tests): the clock, how long a receive
	// waits, a failed message's delay, the schedules' tick.
	now          func() time.Time
	pollWait     time.Duration
	retryDelay   func(attempt int) time.Duration
	scheduleTick time.Duration
}

// NewWorker returns a Worker for cfg. With WebhookAddr set it starts
// listening at once (so WebhookURL is known); Run serves.
func NewWorker(cfg WorkerConfig, opts ...knobs.Option) (*Worker, error) {
	if cfg.World == nil {
		return nil, cfgerr.Invalid(errors.New("worker: Config.World is required"))
	}
	if cfg.Consumer == nil {
		c, ok := cfg.World.(world.Consumer)
		if !ok {
			return nil, cfgerr.Invalid(errors.New("worker: Config.Consumer is required: the World is not a world.Consumer"))
		}
		cfg.Consumer = c
	}
	switch {
	case cfg.Concurrency < 0:
		return nil, cfgerr.Invalid(fmt.Errorf("worker: Config.Concurrency is negative (%d)", cfg.Concurrency))
	case cfg.Concurrency == 0:
		cfg.Concurrency = defaultConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.Visibility < 0:
		return nil, cfgerr.Invalid(fmt.Errorf("worker: Config.Visibility is negative (%s)", cfg.Visibility))
	case cfg.StopTimeout < 0:
		return nil, cfgerr.Invalid(fmt.Errorf("worker: Config.StopTimeout is negative (%s)", cfg.StopTimeout))
	}
	if cfg.Visibility == 0 {
		cfg.Visibility = world.DefaultVisibility
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = defaultStopTimeout
	}
	// A Worker holds back the steps beyond the inline capacity a little
	// (the engine's default is none, as on Lambda); a knob may change it.
	opts = append([]knobs.Option{knobs.WithBackgroundDelay(defaultBackgroundDelay)}, opts...)
	k := knobs.Apply(opts)
	w := &Worker{cfg: cfg, consumer: cfg.Consumer, now: k.Now, pollWait: k.PollWait, retryDelay: k.RetryDelay, scheduleTick: k.ScheduleTick}
	w.knobDefaults()
	p, err := NewProcessor(WorkerConfig{World: cfg.World, Registry: cfg.Registry, Logger: cfg.Logger, Engine: cfg.Engine,
		Version: cfg.Version, Versions: cfg.Versions, Inbox: cfg.Inbox}, opts...)
	if err != nil {
		return nil, err
	}
	w.p = p
	if w.schedules, err = compileSchedules(cfg.Schedules, cfg.Registry); err != nil {
		return nil, err
	}
	if cfg.WebhookAddr != "" {
		w.ln, err = net.Listen("tcp", cfg.WebhookAddr)
		if err != nil {
			return nil, fmt.Errorf("workflow: webhook listener: %w", err)
		}
	}
	return w, nil
}

// knobDefaults gives the settings no knob set their defaults.
func (w *Worker) knobDefaults() {
	if w.now == nil {
		w.now = time.Now
	}
	if w.pollWait <= 0 {
		w.pollWait = defaultPollWait
	}
	if w.scheduleTick <= 0 {
		w.scheduleTick = defaultScheduleTick
	}
	if w.retryDelay == nil {
		w.retryDelay = defaultRetryDelay
	}
}

// defaultRetryDelay is a failed message's delay: exponential from 100ms
// to 30s.
func defaultRetryDelay(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

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
// finishes its SQS long poll (up to a second) to give back what that
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
