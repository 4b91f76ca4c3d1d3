package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// store is the World's implementation.
type store struct {
	cfg    *Config
	ddb    DynamoDBAPI
	sqs    SQSAPI
	cc     *claimCheck
	ss     world.Streamer
	ids    *world.IDSource
	logger *slog.Logger
	cache  *runCache
	// registers: the World built its Streamer, which registers every
	// stream in the table (streams.go); flagged holds the runs whose head
	// it need not flag again.
	registers bool
	flagged   runSet

	// legacyIndex: the table may hold unsharded index keys (moved from
	// version 1), which its listings then also read (shards.go). True
	// until CheckSchema reads a schema item that says otherwise: a World
	// that skips the check does not know.
	legacyIndex bool

	// capacity: ask DynamoDB for consumed capacity and add it up (Stats).
	capacity bool
	stats    statCounters

	// locks serialize this process's commits to one run (striped by run
	// ID), so that they queue instead of racing on the fence; other
	// processes are held off by the conditions alone.
	locks [64]sync.Mutex

	gate     sync.RWMutex
	closed   atomic.Bool
	closeCtx context.Context
	closeFn  context.CancelFunc
}

func (w *store) runLock(runID string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(runID))
	return &w.locks[h.Sum32()%uint32(len(w.locks))]
}

// New returns a World on the resources cfg names. It first checks that the
// table, the queue and the bucket exist and says which one does not, and
// that the table is of this World's SchemaVersion (a *SchemaError when not).
// Options are for Skein's own wiring and tests.
func New(ctx context.Context, cfg Config, opts ...knobs.Option) (*World, error) {
	s, err := newStore(ctx, cfg.withKnobs(knobs.Apply(opts)))
	if err != nil {
		return nil, err
	}
	return newWorld(s), nil
}

// newStore is New's store.
func newStore(ctx context.Context, cfg Config) (*store, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	w := &store{
		cfg: c, ddb: c.DynamoDB, sqs: c.SQS, ss: c.streams,
		cc:     &claimCheck{s3: c.S3, bucket: c.Bucket, prefix: c.Prefix, threshold: c.ClaimCheckThreshold, retention: c.Retention, stored: map[string]struct{}{}},
		ids:    world.NewIDSource(c.now, c.entropy),
		logger: c.Logger,
		cache:  newRunCache(c.cacheRuns),
		// Until CheckSchema says otherwise (shards.go).
		legacyIndex: true,
	}
	w.closeCtx, w.closeFn = context.WithCancel(context.Background())
	if w.ss == nil {
		api, ok := c.S3.(streams.S3API)
		if !ok {
			return nil, errors.New("dynamoworld: invalid config: Config.S3 cannot serve streams (it is not a streams.S3API)")
		}
		ss, err := streams.New(streams.Config{
			S3: api, Bucket: c.Bucket, Prefix: c.Prefix + "streams/", Logger: c.Logger, Registry: streamRegistry{w},
			MaxStreamBytes: c.Limits.MaxStreamBytes,
		})
		if err != nil {
			return nil, fmt.Errorf("dynamoworld: %w", err)
		}
		w.ss, w.registers = ss, true
	}
	if !c.skipCheck {
		if err := w.Check(ctx); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Check is World.Check.
func (w *store) Check(ctx context.Context) error {
	var errs []error
	t, err := w.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(w.cfg.Table)})
	switch {
	case err != nil && notFoundCode(errorCode(err)):
		errs = append(errs, fmt.Errorf("dynamoworld: DynamoDB table %q does not exist (create it with CreateResources): %w", w.cfg.Table, err))
	case err != nil:
		errs = append(errs, ddbErr("DescribeTable", w.cfg.Table, err))
	default:
		have := map[string]bool{}
		for _, g := range t.Table.GlobalSecondaryIndexes {
			have[aws.ToString(g.IndexName)] = true
		}
		for _, want := range []string{indexAll, indexWorkflow, indexStatus} {
			if !have[want] {
				errs = append(errs, fmt.Errorf("dynamoworld: DynamoDB table %q lacks the global secondary index %q (see CreateResources)", w.cfg.Table, want))
			}
		}
		if err := w.CheckSchema(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	_, err = w.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.cfg.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	switch {
	case err != nil && notFoundCode(errorCode(err)):
		errs = append(errs, fmt.Errorf("dynamoworld: SQS queue %s does not exist: %w", w.cfg.QueueURL, err))
	case err != nil:
		errs = append(errs, sqsErr("GetQueueAttributes", w.cfg.QueueURL, err))
	}
	_, err = w.cc.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(w.cfg.Bucket)})
	switch {
	case err != nil && notFoundCode(errorCode(err)):
		errs = append(errs, fmt.Errorf("dynamoworld: S3 bucket %q does not exist: %w", w.cfg.Bucket, err))
	case err != nil:
		errs = append(errs, s3Err("HeadBucket", w.cfg.Bucket, "", err))
	}
	return errors.Join(errs...)
}

// Config is World.Config.
func (w *store) Config() Config { return *w.cfg }

// Limits is World.Limits.
func (w *store) Limits() world.Limits { return w.cfg.Limits }

// Close stops the World from accepting calls and waits for those in flight,
// a Receive's long poll included (up to its wait: see Receive). It deletes
// nothing. Closing twice is not an error.
func (w *store) Close() error {
	if !w.closed.CompareAndSwap(false, true) {
		return nil
	}
	w.closeFn()
	w.gate.Lock()
	defer w.gate.Unlock()
	if c, ok := w.ss.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

func (w *store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.gate.RLock()
	if w.closed.Load() {
		w.gate.RUnlock()
		return world.ErrClosed
	}
	return nil
}

func (w *store) leave() { w.gate.RUnlock() }

// now reads the clock as the World records time: UTC, no monotonic reading,
// so that what it returns equals what it later reads back.
func (w *store) now() time.Time { return w.cfg.now().UTC().Round(0) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", world.ErrInvalid, fmt.Sprintf(format, args...))
}

// Stats are the consumed capacity units the World has been told about (only
// when ReportCapacity was called) and its commit counts.
type Stats struct {
	ReadCapacity  float64
	WriteCapacity float64
}

type statCounters struct {
	mu            sync.Mutex
	read, written float64
}

// ReportCapacity is World.ReportCapacity.
func (w *store) ReportCapacity() { w.capacity = true }

// Stats is World.Stats.
func (w *store) Stats() Stats {
	w.stats.mu.Lock()
	defer w.stats.mu.Unlock()
	return Stats{ReadCapacity: w.stats.read, WriteCapacity: w.stats.written}
}

func (w *store) countRead(cc ...*types.ConsumedCapacity) {
	w.count(false, cc)
}

func (w *store) countReads(cc []types.ConsumedCapacity) {
	for i := range cc {
		w.count(false, []*types.ConsumedCapacity{&cc[i]})
	}
}

func (w *store) countWrite(cc ...types.ConsumedCapacity) {
	ptrs := make([]*types.ConsumedCapacity, len(cc))
	for i := range cc {
		ptrs[i] = &cc[i]
	}
	w.count(true, ptrs)
}

func (w *store) count(write bool, cc []*types.ConsumedCapacity) {
	var sum float64
	for _, c := range cc {
		if c == nil {
			continue
		}
		sum += aws.ToFloat64(c.CapacityUnits)
		if c.CapacityUnits == nil {
			sum += aws.ToFloat64(c.ReadCapacityUnits) + aws.ToFloat64(c.WriteCapacityUnits)
		}
	}
	if sum == 0 {
		return
	}
	w.stats.mu.Lock()
	if write {
		w.stats.written += sum
	} else {
		w.stats.read += sum
	}
	w.stats.mu.Unlock()
}
