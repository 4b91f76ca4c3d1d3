package lambdaemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatchBytes is Lambda's synchronous invocation payload limit, which caps an SQS batch.
const maxBatchBytes = MaxResponseSize

// SQSAPI is the part of the SQS client the ESM uses; *sqs.Client satisfies it.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Invoker runs invocations one at a time; *Function is the real one.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (*Response, error)
	Close() error
}

// ESMConfig configures an event source mapping.
type ESMConfig struct {
	// Mapping gives BatchSize, MaximumBatchingWindow, FunctionResponseTypes and MaximumConcurrency
	// (default 5 when unset). Required.
	Mapping *Mapping
	// SQS is the client (required); QueueURL the source queue (required). QueueARN is the events'
	// eventSourceARN, read from the queue when empty.
	SQS      SQSAPI
	QueueURL string
	QueueARN string
	// Region is the events' awsRegion; default Function.Region, else us-east-1.
	Region string
	// Function configures each execution environment (one per concurrent batch); usually
	// Mapping.FunctionConfig(bootstrap) plus test settings.
	Function FunctionConfig
	// NewInvoker replaces Function (tests use fakes).
	NewInvoker func() (Invoker, error)
	// PollWait is the long-poll wait of an idle poller; default 20 s (SQS's maximum).
	PollWait time.Duration
	// Logger receives a line per batch; default: discarded.
	Logger *slog.Logger
	// OnBatch, if set, is called after each batch is settled, from the poller's goroutine.
	OnBatch func(BatchReport)
}

// BatchReport is one invocation of the mapping and how its batch was settled.
type BatchReport struct {
	Worker     int
	Event      events.SQSEvent
	Response   *Response // nil when InvokeErr is set
	InvokeErr  error     // the harness could not invoke (treated as a function error)
	Settlement Settlement
	Deleted    []string // message IDs deleted
	DeleteErr  error
}

// ESMStats counts the mapping's work.
type ESMStats struct {
	Batches        int
	Messages       int
	FunctionErrors int // batches with a function error or a harness error
	Deleted        int
	NotDeleted     int // messages left to come back after the visibility timeout
	ColdStarts     int
	ReceiveErrors  int
}

// ESM is an SQS event source mapping: MaximumConcurrency pollers, each with its own execution
// environment, receive batches, invoke the function, and settle.
type ESM struct {
	cfg            ESMConfig
	concurrency    int
	reportFailures bool
	logger         *slog.Logger

	mu       sync.Mutex
	cancel   context.CancelFunc
	queueARN string
	stats    ESMStats

	busy atomic.Int64 // batches received and not yet settled
	wg   sync.WaitGroup

	envMu sync.Mutex
	envs  map[int]Invoker // each poller's execution environment
}

// killer is what Kill needs of an execution environment; *Function has it.
type killer interface {
	Kill() error
	InFlight() string
	PID() int
}

// NewESM checks cfg.
func NewESM(cfg ESMConfig) (*ESM, error) {
	switch {
	case cfg.Mapping == nil:
		return nil, errors.New("lambdaemu: ESMConfig.Mapping is required")
	case cfg.SQS == nil:
		return nil, errors.New("lambdaemu: ESMConfig.SQS is required")
	case cfg.QueueURL == "":
		return nil, errors.New("lambdaemu: ESMConfig.QueueURL is required")
	case cfg.Mapping.BatchSize < 1:
		return nil, fmt.Errorf("lambdaemu: BatchSize %d", cfg.Mapping.BatchSize)
	}
	if cfg.NewInvoker == nil {
		fc, err := cfg.Function.withDefaults()
		if err != nil {
			return nil, err
		}
		cfg.NewInvoker = func() (Invoker, error) { return NewFunction(fc) }
		if cfg.Region == "" {
			cfg.Region = fc.Region
		}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.PollWait <= 0 || cfg.PollWait > 20*time.Second {
		cfg.PollWait = 20 * time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := cfg.Mapping.MaximumConcurrency
	if n <= 0 {
		n = defaultMaximumConcurrency
	}
	return &ESM{cfg: cfg, concurrency: n, reportFailures: cfg.Mapping.ReportBatchItemFailures(),
		logger: logger, queueARN: cfg.QueueARN, envs: map[int]Invoker{}}, nil
}

// Start starts the pollers. They run until Stop (or until ctx ends).
func (e *ESM) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return errors.New("lambdaemu: ESM already started")
	}
	if !e.cfg.Mapping.Enabled {
		return errors.New("lambdaemu: the event source mapping is disabled (Enabled: false)")
	}
	if e.queueARN == "" {
		out, err := e.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(e.cfg.QueueURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			return fmt.Errorf("lambdaemu: read the queue ARN: %w", err)
		}
		e.queueARN = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
	ctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	for i := range e.concurrency {
		e.wg.Go(func() { e.poll(ctx, i) })
	}
	return nil
}

// Stop stops polling, lets the batches in flight finish and settle (each is bounded by the function
// timeout), and closes the execution environments.
func (e *ESM) Stop() error {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	e.wg.Wait()
	return nil
}

// Kill sends SIGKILL to every execution environment that is running an invocation, as a crash would,
// and returns how many it killed. Those invocations end with Runtime.ExitError, so their batches are
// not deleted and come back after the queue's visibility timeout; the next batch of each poller starts
// a new process.
func (e *ESM) Kill() int {
	e.envMu.Lock()
	envs := make([]Invoker, 0, len(e.envs))
	for _, inv := range e.envs {
		envs = append(envs, inv)
	}
	e.envMu.Unlock()
	n := 0
	for _, inv := range envs {
		if k, ok := inv.(killer); ok && k.InFlight() != "" {
			if err := k.Kill(); err == nil {
				n++
			}
		}
	}
	return n
}

// KillOne sends SIGKILL to one execution environment that is running an invocation, as a crash of
// that one process would, and returns the killed process's ID (0 when none was running an
// invocation). pick chooses among the n running ones: it returns an index in [0, n). Like Kill, it
// returns once the process has exited.
func (e *ESM) KillOne(pick func(n int) int) int {
	e.envMu.Lock()
	workers := make([]int, 0, len(e.envs))
	for w := range e.envs {
		workers = append(workers, w)
	}
	sort.Ints(workers)
	var busy []killer
	for _, w := range workers {
		if k, ok := e.envs[w].(killer); ok && k.InFlight() != "" {
			busy = append(busy, k)
		}
	}
	e.envMu.Unlock()
	if len(busy) == 0 {
		return 0
	}
	k := busy[pick(len(busy))]
	pid := k.PID()
	if pid == 0 || k.Kill() != nil {
		return 0
	}
	return pid
}

// Stats returns a snapshot of the counters.
func (e *ESM) Stats() ESMStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// QueueDepth is a queue's approximate message counts.
type QueueDepth struct {
	Visible, NotVisible, Delayed int
}

// Empty reports whether all three counts are zero.
func (d QueueDepth) Empty() bool { return d.Visible == 0 && d.NotVisible == 0 && d.Delayed == 0 }

// QueueAttributesAPI reads queue attributes; *sqs.Client satisfies it.
type QueueAttributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// ReadQueueDepth reads ApproximateNumberOfMessages, ...NotVisible and ...Delayed.
func ReadQueueDepth(ctx context.Context, c QueueAttributesAPI, queueURL string) (QueueDepth, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return QueueDepth{}, err
	}
	var d QueueDepth
	for name, dst := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.NotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
	} {
		if s, ok := out.Attributes[string(name)]; ok {
			if *dst, err = strconv.Atoi(s); err != nil {
				return QueueDepth{}, fmt.Errorf("%s: %q", name, s)
			}
		}
	}
	return d, nil
}

// Drain waits until the source queue holds no visible, in-flight or delayed message and no batch is
// being processed, seen twice in a row 100 ms apart. It gives up when ctx ends; without a deadline
// on ctx it waits at most 2 minutes.
func (e *ESM) Drain(ctx context.Context) error {
	e.mu.Lock()
	started := e.cancel != nil
	e.mu.Unlock()
	if !started {
		return errors.New("lambdaemu: Drain before Start")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	quiet := 0
	var last QueueDepth
	var lastErr error
	for {
		d, err := ReadQueueDepth(ctx, e.cfg.SQS, e.cfg.QueueURL)
		if err == nil {
			last = d
		} else {
			lastErr = err
		}
		if err == nil && d.Empty() && e.busy.Load() == 0 {
			quiet++
			if quiet >= 2 {
				return nil
			}
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lambdaemu: drain: %d visible, %d in flight, %d delayed, %d batches in progress (last error: %v): %w",
				last.Visible, last.NotVisible, last.Delayed, e.busy.Load(), lastErr, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// poll is one poller with its own execution environment.
func (e *ESM) poll(ctx context.Context, worker int) {
	var inv Invoker
	setEnv := func(i Invoker) {
		inv = i
		e.envMu.Lock()
		if i == nil {
			delete(e.envs, worker)
		} else {
			e.envs[worker] = i
		}
		e.envMu.Unlock()
	}
	defer func() {
		if inv != nil {
			_ = inv.Close()
			setEnv(nil)
		}
	}()
	var carry []types.Message
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		batch, rest, err := e.receiveBatch(ctx, carry)
		carry = rest
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.count(func(s *ESMStats) { s.ReceiveErrors++ })
			e.logger.WarnContext(ctx, "lambdaemu: receive failed", "worker", worker, "err", err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if len(batch) == 0 {
			continue
		}
		e.busy.Add(1)
		if inv == nil {
			var created Invoker
			if created, err = e.cfg.NewInvoker(); err != nil {
				e.logger.ErrorContext(ctx, "lambdaemu: cannot create the execution environment", "err", err)
			} else {
				setEnv(created)
			}
		}
		// A batch in flight finishes even when Stop is called, as it would on Lambda.
		rep := e.process(context.WithoutCancel(ctx), worker, inv, batch, err)
		e.busy.Add(-1)
		if rep.InvokeErr != nil && inv != nil {
			_ = inv.Close()
			setEnv(nil)
		}
	}
}

// receiveBatch gathers up to BatchSize messages: one receive when there is no batching window,
// otherwise until the window (counted from the first message) closes, and never more than 6 MB.
// Messages that do not fit are returned in rest and open the next batch.
func (e *ESM) receiveBatch(ctx context.Context, carry []types.Message) (batch, rest []types.Message, err error) {
	m := e.cfg.Mapping
	size := 0
	for _, msg := range carry {
		if len(batch) < m.BatchSize && (len(batch) == 0 || size+messageSize(msg) <= maxBatchBytes) {
			batch = append(batch, msg)
			size += messageSize(msg)
		} else {
			rest = append(rest, msg)
		}
	}
	var windowEnd time.Time
	if len(batch) > 0 {
		windowEnd = time.Now().Add(m.MaximumBatchingWindow)
	}
	for len(batch) < m.BatchSize && len(rest) == 0 {
		wait := e.cfg.PollWait
		if len(batch) > 0 {
			wait = time.Until(windowEnd)
			if m.MaximumBatchingWindow <= 0 || wait <= 0 {
				break
			}
		}
		out, err := e.cfg.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(e.cfg.QueueURL),
			MaxNumberOfMessages:         int32(min(10, m.BatchSize-len(batch))),
			WaitTimeSeconds:             int32(min(20, math.Ceil(wait.Seconds()))),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if len(batch) > 0 {
				return batch, rest, nil
			}
			return nil, rest, err
		}
		for _, msg := range out.Messages {
			sz := messageSize(msg)
			if len(batch) > 0 && size+sz > maxBatchBytes {
				rest = append(rest, msg)
				continue
			}
			batch = append(batch, msg)
			size += sz
		}
		if len(batch) > 0 && windowEnd.IsZero() {
			windowEnd = time.Now().Add(m.MaximumBatchingWindow)
		}
	}
	return batch, rest, nil
}

// messageSize estimates a record's share of the invocation payload.
func messageSize(m types.Message) int {
	n := len(aws.ToString(m.Body)) + len(aws.ToString(m.ReceiptHandle)) + 512
	for k, v := range m.MessageAttributes {
		n += len(k) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue) + 64
	}
	return n
}

// lambdaAttribute reports whether Lambda copies a system attribute into the event.
func lambdaAttribute(name string) bool {
	switch name {
	case "ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
		"AWSTraceHeader", "MessageGroupId", "SequenceNumber", "MessageDeduplicationId":
		return true
	}
	return false
}

// Event builds the events.SQSEvent Lambda would deliver for msgs.
func Event(msgs []types.Message, queueARN, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			if lambdaAttribute(k) {
				attrs[k] = v
			}
		}
		mattrs := map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			a := events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
			if a.StringListValues == nil {
				a.StringListValues = []string{}
			}
			if a.BinaryListValues == nil {
				a.BinaryListValues = [][]byte{}
			}
			mattrs[k] = a
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         queueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		}
	}
	return ev
}

func (e *ESM) process(ctx context.Context, worker int, inv Invoker, msgs []types.Message, invokerErr error) BatchReport {
	e.mu.Lock()
	arn := e.queueARN
	e.mu.Unlock()
	rep := BatchReport{Worker: worker, Event: Event(msgs, arn, e.cfg.Region)}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = aws.ToString(m.MessageId)
	}
	var fnErr error
	switch {
	case inv == nil:
		rep.InvokeErr = fmt.Errorf("no execution environment: %w", invokerErr)
		fnErr = rep.InvokeErr
	default:
		payload, err := json.Marshal(rep.Event)
		if err != nil {
			rep.InvokeErr = err
			fnErr = err
			break
		}
		rep.Response, rep.InvokeErr = inv.Invoke(ctx, payload)
		switch {
		case rep.InvokeErr != nil:
			fnErr = rep.InvokeErr
		case rep.Response.Err != nil:
			fnErr = rep.Response.Err
		}
	}
	var body []byte
	if rep.Response != nil {
		body = rep.Response.Payload
	}
	rep.Settlement = Settle(ids, e.reportFailures, body, fnErr)
	if len(rep.Settlement.Delete) > 0 {
		rep.Deleted, rep.DeleteErr = e.deleteMessages(ctx, msgs, rep.Settlement.Delete)
	}

	e.count(func(s *ESMStats) {
		s.Batches++
		s.Messages += len(msgs)
		if fnErr != nil {
			s.FunctionErrors++
		}
		s.Deleted += len(rep.Deleted)
		s.NotDeleted += len(msgs) - len(rep.Deleted)
		if rep.Response != nil && rep.Response.Cold {
			s.ColdStarts++
		}
	})
	attrs := []any{"worker", worker, "messages", len(msgs), "deleted", len(rep.Deleted), "reason", rep.Settlement.Reason}
	if rep.Response != nil {
		attrs = append(attrs, "requestId", rep.Response.RequestID, "duration", rep.Response.Duration, "cold", rep.Response.Cold)
	}
	if rep.DeleteErr != nil {
		attrs = append(attrs, "deleteErr", rep.DeleteErr)
	}
	e.logger.InfoContext(ctx, "lambdaemu: batch", attrs...)
	if e.cfg.OnBatch != nil {
		e.cfg.OnBatch(rep)
	}
	return rep
}

// deleteMessages deletes the messages named by ids with DeleteMessageBatch (ten at a time) and
// returns the IDs actually deleted.
func (e *ESM) deleteMessages(ctx context.Context, msgs []types.Message, ids []string) ([]string, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var entries []types.DeleteMessageBatchRequestEntry
	byEntry := map[string]string{}
	for i, m := range msgs {
		id := aws.ToString(m.MessageId)
		if !want[id] {
			continue
		}
		entryID := strconv.Itoa(i)
		byEntry[entryID] = id
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(entryID), ReceiptHandle: m.ReceiptHandle})
	}
	var deleted []string
	var errs []error
	for start := 0; start < len(entries); start += 10 {
		chunk := entries[start:min(start+10, len(entries))]
		out, err := e.cfg.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
			QueueUrl: aws.String(e.cfg.QueueURL),
			Entries:  chunk,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range out.Successful {
			deleted = append(deleted, byEntry[aws.ToString(s.Id)])
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("delete %s: %s: %s", byEntry[aws.ToString(f.Id)],
				aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return deleted, errors.Join(errs...)
}

func (e *ESM) count(fn func(*ESMStats)) {
	e.mu.Lock()
	fn(&e.stats)
	e.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
