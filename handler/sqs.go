package handler

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/skeinflow/skein/internal/engine"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/internal/schedmsg"
	"github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/worker"
	"github.com/skeinflow/skein/world"
)

// SQSHandler is the flow function's handler type, for lambda.Start.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Message attributes the queue of a dynamoworld.World sets (a wire contract
// of that World): "skein-enc" says how the body is encoded when it is not
// the message itself.
const (
	attrEncoding = "skein-enc"
	encBase64    = "base64"
	encEmpty     = "empty"
)

// NewSQS returns the flow function's handler: it handles every record of an
// SQS batch (a world.Message: a run to continue, or background steps to
// execute; a schedule message, from an EventBridge Scheduler schedule,
// whose run it starts; or a webhook delivery from the webhook handler,
// which it commits: see worker.Processor.Process) through the engine, and
// reports the records to retry in
// BatchItemFailures. It never returns an error, so one bad message never
// fails its batch:
//
//   - a record handled, or one that can never succeed (its run or step does
//     not exist; its run has finished) is acknowledged, the latter with a
//     logged reason;
//   - a malformed body (a schedule message that does not decode too)
//     follows Config.Malformed (by default it is reported
//     failed, so that the queue's redrive policy dead-letters it);
//   - a record that failed for a reason that may pass (a throttled write, an
//     unreachable service) is reported failed and comes back after the
//     queue's visibility timeout;
//   - a record still running at deadline-DefaultReturnMargin (a step that outlived
//     the time budget) is cancelled and reported failed.
//
// The engine stops starting inline steps at deadline-TimeBudgetMargin and
// enqueues a continuation of the run instead. Records of different runs run
// concurrently (up to Config.Worker.Concurrency); ApproximateReceiveCount is the
// delivery attempt.
func NewSQS(c Config, opts ...knobs.Option) (SQSHandler, error) {
	cfg := c.settle(opts)
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	inv := &invocation{}
	logger := withRequestID(cfg.Worker.Logger, inv)
	wc := cfg.Worker
	wc.Logger = logger
	// The records' context ends the return margin before the deadline; the
	// engine counts its margin from there.
	p, err := worker.NewProcessor(wc, append(cfg.opts, knobs.WithBudgetMargin(cfg.TimeBudgetMargin-cfg.returnMargin))...)
	if err != nil {
		return nil, fmt.Errorf("handler: Config.Worker: %w", err)
	}
	stepLease := cfg.Worker.Engine.StepLeaseTTL
	if stepLease <= 0 {
		stepLease = engine.DefaultStepLeaseTTL
	}
	h := &sqsHandler{cfg: cfg, p: p, log: logger, inv: inv, stepLease: stepLease}
	return h.handle, nil
}

type sqsHandler struct {
	cfg       settings
	p         *worker.Processor
	log       *slog.Logger
	inv       *invocation
	stepLease time.Duration
}

// record is one SQS record being handled.
type record struct {
	i       int
	msg     events.SQSMessage
	attempt int
	m       world.Message
	log     *slog.Logger

	// Guarded by the batch's mutex. done says the record's fate is
	// decided: by its own goroutine when the engine returns, or by the
	// handler when it gives the record up at the deadline, whichever comes
	// first; the other then leaves the record alone (see batch.settle).
	started bool // handed to the engine
	done    bool // handled (acknowledged or failed), or given up
	failed  bool
}

// fate is what handling a record decided: whether it failed (it is
// reported for retry), and whether its message is hidden (Config.Queue),
// for how long.
type fate struct {
	failed  bool
	release bool
	hide    time.Duration
}

// group is a sequence of records handled one after the other: the
// continuations of one run, or one message of background steps.
type group []*record

// batch is one invocation's handling of its records.
type batch struct {
	ctx context.Context // the invocation's
	// work is the records' context: it ends ReturnMargin before the
	// deadline, when the handler gives up what is left.
	work context.Context
	// releases bounds the releases of messages: they end by
	// deadline-ReturnMargin/4, leaving the handler time to answer.
	releases context.Context
	cancel   func()
	// graceEnd is when the handler stops waiting for the records it
	// cancelled, deadline-ReturnMargin/2 (zero: no deadline).
	graceEnd time.Time

	mu        sync.Mutex     // guards the records' started, done and failed
	releasing sync.WaitGroup // releases the records' goroutines decided
}

// newBatch starts the handling of an invocation's records, ctx its
// context. The releases do not end with ctx (a cancelled invocation still
// hides the messages it gave up), only by their deadline.
func (h *sqsHandler) newBatch(ctx context.Context) *batch {
	b := &batch{ctx: ctx, work: ctx, releases: context.WithoutCancel(ctx), cancel: func() {}}
	if deadline, ok := ctx.Deadline(); ok {
		var cancelWork, cancelReleases context.CancelFunc
		b.work, cancelWork = context.WithDeadline(ctx, deadline.Add(-h.cfg.returnMargin))
		b.releases, cancelReleases = context.WithDeadline(b.releases, deadline.Add(-h.cfg.returnMargin/4))
		b.cancel = func() { cancelWork(); cancelReleases() }
		b.graceEnd = deadline.Add(-h.cfg.returnMargin / 2)
	}
	return b
}

func (h *sqsHandler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := time.Now()
	reqID := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		reqID = lc.AwsRequestID
	}
	h.inv.set(reqID)
	ctx, span := h.startSpan(ctx, reqID, len(ev.Records))
	defer h.endSpan(ctx, span)

	b := h.newBatch(ctx)
	defer b.cancel()
	recs, groups := h.parse(b, ev)
	h.run(b, groups)
	resp, abandoned, unstarted := b.giveUp(recs)
	for _, r := range abandoned {
		r.log.WarnContext(ctx, "handler: message still in progress at the deadline; reported failed", "reason", "time budget exceeded")
	}
	for _, r := range unstarted {
		r.log.WarnContext(ctx, "handler: no time left to start the message; reported failed", "reason", "time budget exceeded")
	}
	h.releaseLate(b.releases, abandoned, unstarted)
	// The releases of the records handled before the deadline end by then
	// too (b.releases): the handler waits for them no longer, whether or
	// not the queue heeds the cancellation.
	waitWithin(b.releases, &b.releasing)
	if err := flushMetrics(h.cfg.Worker.Engine.Metrics, h.cfg.now(), reqID); err != nil {
		h.log.WarnContext(ctx, "handler: metrics", "err", err)
	}
	h.log.DebugContext(ctx, "handler: batch done", "records", len(ev.Records), "failed", len(resp.BatchItemFailures),
		"abandoned", len(abandoned)+len(unstarted), "duration", time.Since(start))
	return resp, nil
}

// parse decodes the records and sorts them into groups; a malformed one is
// settled at once (Config.Malformed).
func (h *sqsHandler) parse(b *batch, ev events.SQSEvent) ([]*record, []group) {
	recs := make([]*record, len(ev.Records))
	var groups []group
	byRun := map[string]int{}
	for i, msg := range ev.Records {
		r := &record{i: i, msg: msg, attempt: receiveCount(msg)}
		recs[i] = r
		r.log = h.log.With("messageId", msg.MessageId, "attempt", r.attempt)
		body, err := recordBody(msg)
		if err == nil && schedmsg.IsMessage(body) {
			// A schedule's firing: a group of its own.
			var f schedmsg.Firing
			if f, err = schedmsg.DecodeMessage(body); err == nil {
				r.log = r.log.With("schedule", f.Name, "scheduledTime", f.Time)
				groups = append(groups, group{r})
				continue
			}
		} else if err == nil && sdk.IsWebhookDelivery(body) {
			// A webhook request to commit: a group of its own.
			groups = append(groups, group{r})
			continue
		} else if err == nil {
			r.m, err = world.DecodeMessage(body)
		}
		if err != nil {
			h.settle(b, r, h.malformed(b.ctx, r, err))
			continue
		}
		r.log = r.log.With("runId", r.m.RunID)
		if lag, ok := queueLag(msg, r.m, h.cfg.now()); ok && h.cfg.Worker.Engine.Metrics != nil {
			h.cfg.Worker.Engine.Metrics.Duration(engine.MetricQueueLag, lag)
		}
		if r.m.StepID != "" {
			r.log = r.log.With("stepId", r.m.StepID)
			groups = append(groups, group{r})
			continue
		}
		if g, ok := byRun[r.m.RunID]; ok {
			groups[g] = append(groups[g], r)
			continue
		}
		byRun[r.m.RunID] = len(groups)
		groups = append(groups, group{r})
	}
	return recs, groups
}

// run handles the groups concurrently (up to Config.Worker.Concurrency records at
// once) until they are done or the records' context ends; then it gives
// them until deadline-ReturnMargin/2 (ReturnMargin/2 when the invocation
// was cancelled early or has no deadline) to unwind after their
// cancellation, and returns without them. The grace ends at a time set by
// the deadline, not at a time counted from when the handler saw the
// cancellation, which a busy machine can delay.
func (h *sqsHandler) run(b *batch, groups []group) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, h.cfg.Worker.Concurrency)
	for _, g := range groups {
		wg.Go(func() { h.runGroup(b, g, sem) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-b.work.Done():
		wait := h.cfg.returnMargin / 2
		if !b.graceEnd.IsZero() {
			wait = min(wait, time.Until(b.graceEnd))
		}
		grace := time.NewTimer(wait)
		select {
		case <-finished:
		case <-grace.C:
		}
		grace.Stop()
	}
}

// runGroup handles a group's records one after the other, each once a slot
// of sem is free, and starts none once the records' context has ended.
func (h *sqsHandler) runGroup(b *batch, g group, sem chan struct{}) {
	for _, r := range g {
		select {
		case sem <- struct{}{}:
		case <-b.work.Done():
			return
		}
		ok := b.begin(r)
		if ok {
			h.settle(b, r, h.process(b.work, r))
		}
		<-sem
		if !ok {
			return
		}
	}
}

// begin marks r handed to the engine, unless the records' context has
// ended (the handler gives r up then).
func (b *batch) begin(r *record) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.done || b.work.Err() != nil {
		return false
	}
	r.started = true
	return true
}

// handlerGivenUpMsg is logged when a record's handling ends after the
// handler gave it up.
const handlerGivenUpMsg = "handler: message ended after it was given up at the deadline; left as reported"

// settle decides r's fate, f, unless the handler has given r up at the
// deadline already: that decided it (reported failed, its message released
// by releaseLate), and a second release, after the answer, could change the
// visibility of a message another invocation holds by then. A release f
// asks for ends by deadline-ReturnMargin/4; the handler waits for it
// before it answers.
func (h *sqsHandler) settle(b *batch, r *record, f fate) {
	b.mu.Lock()
	if r.done {
		b.mu.Unlock()
		r.log.DebugContext(b.ctx, handlerGivenUpMsg, "failed", f.failed)
		return
	}
	r.done, r.failed = true, f.failed
	release := f.release && h.cfg.Queue != nil && r.msg.ReceiptHandle != ""
	if release {
		b.releasing.Add(1)
	}
	b.mu.Unlock()
	if release {
		defer b.releasing.Done()
		h.releaseWithin(b.releases, r, f.hide)
	}
}

// giveUp reports the records that failed and gives up those still running
// or never started, deciding their fate (failed) once and for all.
func (b *batch) giveUp(recs []*record) (resp events.SQSEventResponse, abandoned, unstarted []*record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range recs {
		switch {
		case r.done && !r.failed:
			continue
		case r.done:
		case r.started:
			abandoned = append(abandoned, r)
		default:
			unstarted = append(unstarted, r)
		}
		r.done, r.failed = true, true
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.msg.MessageId})
	}
	return resp, abandoned, unstarted
}

// process handles one record and returns its fate.
func (h *sqsHandler) process(ctx context.Context, r *record) fate {
	start := time.Now()
	body, _ := recordBody(r.msg) // decoded before
	err := h.p.Process(ctx, body, r.attempt)
	took := time.Since(start)
	switch {
	case err == nil:
		r.log.DebugContext(ctx, "handler: message handled", "duration", took)
		return fate{}
	case sdk.IsPermanent(err):
		r.log.WarnContext(ctx, "handler: message acknowledged: it can never succeed", "reason", err.Error(), "duration", took)
		return fate{}
	case ctx.Err() != nil:
		r.log.WarnContext(ctx, "handler: message cut off at the deadline; reported failed", "reason", err.Error(), "duration", took)
		return fate{failed: true, release: true, hide: h.stepLease}
	default:
		r.log.WarnContext(ctx, "handler: message failed; reported for retry", "reason", err.Error(), "duration", took)
		f := fate{failed: true}
		if h.cfg.retryDelay != nil {
			// Counting the deliveries of the messages it replaces keeps a
			// replaced message's backoff (world.Message.Delivered).
			f.release, f.hide = true, h.cfg.retryDelay(r.attempt+max(r.m.Delivered, 0))
		}
		return f
	}
}

// malformed applies the Malformed policy to a record whose body is not a
// queue message.
func (h *sqsHandler) malformed(ctx context.Context, r *record, err error) fate {
	switch {
	case h.cfg.Malformed == Acknowledge:
		r.log.ErrorContext(ctx, "handler: malformed message acknowledged", "reason", err.Error(), "body", truncate(r.msg.Body, 256))
		return fate{}
	case r.attempt > h.cfg.maxMalformedReceives:
		r.log.ErrorContext(ctx, "handler: malformed message acknowledged after too many receives", "reason", err.Error(),
			"maxReceives", h.cfg.maxMalformedReceives, "body", truncate(r.msg.Body, 256))
		return fate{}
	default:
		r.log.ErrorContext(ctx, "handler: malformed message reported failed, for the dead-letter queue", "reason", err.Error(),
			"body", truncate(r.msg.Body, 256))
		f := fate{failed: true}
		if h.cfg.retryDelay != nil {
			f.release, f.hide = true, h.cfg.retryDelay(r.attempt)
		}
		return f
	}
}

// releaseLate hides the messages of the records given up at the deadline:
// an abandoned one until the lease of the step it runs expires (no sooner
// can a new delivery take the step over), an unstarted one not at all. The
// releases run at once and end with ctx (the batch's releases: by
// deadline-ReturnMargin/4), which leaves the handler time to answer: an
// answer after the deadline would fail the whole batch, records handled
// included, while a release that does not happen only leaves its message
// to the queue's visibility timeout.
func (h *sqsHandler) releaseLate(ctx context.Context, abandoned, unstarted []*record) {
	if h.cfg.Queue == nil || len(abandoned)+len(unstarted) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, r := range abandoned {
		wg.Go(func() { h.releaseWithin(ctx, r, h.stepLease) })
	}
	for _, r := range unstarted {
		wg.Go(func() { h.releaseWithin(ctx, r, 0) })
	}
	waitWithin(ctx, &wg)
}

// waitWithin waits for wg, or until ctx ends: a release that does not heed
// its context's end (a queue client blocked in a call it does not cancel)
// must not hold the answer past its bound. A release left running is
// cancelled as the handler returns (batch.cancel).
func waitWithin(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// releaseWithin hides a failed record's message for d, when Config.Queue
// is set, within ctx's deadline and a second.
func (h *sqsHandler) releaseWithin(ctx context.Context, r *record, d time.Duration) {
	if h.cfg.Queue == nil || r.msg.ReceiptHandle == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d = min(max(d, 0), 12*time.Hour)
	if err := h.cfg.Queue.Release(ctx, &world.ReleaseParams{Receipt: r.msg.ReceiptHandle, Delay: d}); err != nil {
		r.log.WarnContext(ctx, "handler: could not change the visibility of a failed message", "err", err.Error())
	}
}

// recordBody returns a record's queue body, decoding what the queue encoded.
func recordBody(m events.SQSMessage) ([]byte, error) {
	a, ok := m.MessageAttributes[attrEncoding]
	if !ok || a.StringValue == nil {
		return []byte(m.Body), nil
	}
	switch *a.StringValue {
	case encBase64:
		b, err := base64.StdEncoding.DecodeString(m.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: base64 body: %v", world.ErrInvalid, err)
		}
		return b, nil
	case encEmpty:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: unknown body encoding %q", world.ErrInvalid, *a.StringValue)
}

// receiveCount is the record's ApproximateReceiveCount (0 when absent).
func receiveCount(m events.SQSMessage) int {
	n, err := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
