package dynamoworld

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/dynamoworld/internal/streams"
	"github.com/skeinflow/skein/world"
)

// The World's Streamer methods delegate to a streams.Streamer on the same
// bucket (Skein's tests may give another). It registers every
// stream in the table (see doc.go, Streams), and ListStreams answers from
// there.

// WriteStream appends chunks to a stream (see streams.Streamer).
func (w *store) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.ss.WriteStream(ctx, p)
}

// CloseStream closes a stream.
func (w *store) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.ss.CloseStream(ctx, p)
}

// ReadStream reads chunks of a stream.
func (w *store) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.ss.ReadStream(ctx, p)
}

// StreamInfo describes a stream.
func (w *store) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.ss.StreamInfo(ctx, p)
}

// ListStreams lists a run's streams, sorted. With the default Streamer it
// reads the table: nothing when the run ended on the condition that it had
// no stream (this World's cache knows), else the run head's flag (one
// GetItem, unless known) and, when the run has streams, their markers (one
// Query). A run ID without a run (no head) is listed from S3.
func (w *store) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	if !w.registers || p == nil || p.RunID == "" || strings.Contains(p.RunID, "/") {
		return w.ss.ListStreams(ctx, p)
	}
	state := streamsUnknown
	if snap := w.cache.get(p.RunID); snap != nil && snap.run != nil {
		if snap.run.Status.Terminal() && snap.endChecked && snap.streams == streamsNone {
			return []string{}, nil
		}
		if snap.streams == streamsSome {
			state = streamsSome
		}
	}
	if state != streamsSome {
		head, err := w.getItem(ctx, runHeadKey(p.RunID))
		if err != nil {
			return nil, err
		}
		switch headStreams(head) {
		case streamsUnknown:
			return w.ss.ListStreams(ctx, p)
		case streamsNone:
			return []string{}, nil
		}
	}
	its, err := w.queryAll(ctx, runPK(p.RunID), prefStream, true)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(its))
	for _, it := range its {
		names = append(names, getS(it, attrSK)[len(prefStream):])
	}
	return names, nil // in key order: sorted
}

// StreamChanged is closed at the next write to or close of the stream made
// through this World (other writers are seen by polling: world.Tail), when
// the Streamer is a world.StreamNotifier; otherwise it is never closed.
func (w *store) StreamChanged(runID, name string) <-chan struct{} {
	if n, ok := w.ss.(world.StreamNotifier); ok {
		return n.StreamChanged(runID, name)
	}
	return nil
}

// streamState is what a run head's flag os says of the run's streams.
type streamState uint8

const (
	streamsUnknown streamState = iota // not read, or no run (no head)
	streamsNone                       // os = 0
	streamsSome                       // os = 1: the run's streams have markers
)

func headStreams(head item) streamState {
	if _, ok := head[aStreams]; !ok {
		return streamsUnknown
	}
	if getN(head, aStreams) == 0 {
		return streamsNone
	}
	return streamsSome
}

// streamRegistry is the default Streamer's streams.Registry: it records a
// stream in the run's partition before the stream's first object.
type streamRegistry struct{ w *store }

var _ streams.Registry = streamRegistry{}

// Register sets the run head's flag (unless this World did already) and
// opens the stream, at once; created when the stream is new.
func (r streamRegistry) Register(ctx context.Context, runID, name string) (created bool, err error) {
	w := r.w
	flag := !w.flagged.has(runID)
	err = parallel(ctx, 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			if flag {
				return w.flagStreams(ctx, runID)
			}
			return nil
		}
		var err error
		created, err = w.openStream(ctx, runID, name)
		return err
	})
	return created, err
}

// flagStreams sets the run head's flag os to 1: the run has streams, with
// markers. A run that does not exist (no head, so no flag) is left as it
// is.
func (w *store) flagStreams(ctx context.Context, runID string) error {
	e := newExpr()
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(w.cfg.Table), Key: runHeadKey(runID).av(),
		UpdateExpression:         aws.String("SET " + e.n(aStreams) + " = " + e.v(num(1))),
		ConditionExpression:      aws.String("attribute_exists(" + e.n(aStreams) + ")"),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
	}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	out, err := w.ddb.UpdateItem(ctx, in)
	if _, failed := conditionFailed(err); failed {
		w.flagged.add(runID) // nothing to flag
		return nil
	}
	if err != nil {
		return ddbErr("UpdateItem", w.cfg.Table, err)
	}
	w.countWrite(derefCC(out.ConsumedCapacity)...)
	w.flagged.add(runID)
	w.cache.setStreams(runID)
	return nil
}

// maxOpenAttempts bounds openStream's tries through transaction
// conflicts (other writers opening streams of the run at once).
const maxOpenAttempts = 50

// openStream puts a stream's marker in its run's partition and counts it
// in the run's stream count (the item oc), in one transaction on
// condition that the marker is new and the count below
// Limits.MaxStreams: created reports a new marker; a stream the run has
// not room for is a *world.LimitError, and nothing is written. The count
// is exact across processes (DynamoDB judges both conditions
// atomically), a new stream costs this one request (the marker's own
// write before), and a stream already open costs it too but counts once.
func (w *store) openStream(ctx context.Context, runID, name string) (created bool, err error) {
	limit := w.cfg.Limits.MaxStreams
	for attempt := 0; ; attempt++ {
		in := w.openStreamInput(runID, name, limit)
		out, err := w.ddb.TransactWriteItems(ctx, in)
		if err == nil {
			w.countWrite(out.ConsumedCapacity...)
			return true, nil
		}
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			return false, ddbErr("TransactWriteItems", w.cfg.Table, err)
		}
		marker, count, conflict := openReasons(tc.CancellationReasons)
		switch {
		case marker:
			return false, nil // opened before: counted then
		case count:
			return false, &world.LimitError{RunID: runID, Limit: "streams", Max: int64(limit), Size: int64(limit) + 1, What: "stream " + name}
		case !conflict || attempt+1 >= maxOpenAttempts:
			return false, ddbErr("TransactWriteItems", w.cfg.Table, err)
		}
		if err := backoff(ctx, attempt); err != nil {
			return false, err
		}
	}
}

// openStreamInput is openStream's transaction: the marker, on its
// absence, then the count, below limit.
func (w *store) openStreamInput(runID, name string, limit int) *dynamodb.TransactWriteItemsInput {
	me := newExpr()
	marker := streamKey(runID, name).av()
	setT(marker, aCreated, w.now())
	ce := newExpr()
	n := ce.n(aCount)
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(w.cfg.Table), Item: marker, ConditionExpression: aws.String(me.notExists()),
			ExpressionAttributeNames: me.nameMap(),
		}},
		{Update: &types.Update{
			TableName: aws.String(w.cfg.Table), Key: streamCountKey(runID).av(),
			UpdateExpression:         aws.String("SET " + n + " = if_not_exists(" + n + ", " + ce.v(num(0)) + ") + " + ce.v(num(1))),
			ConditionExpression:      aws.String("attribute_not_exists(" + n + ") OR " + n + " < " + ce.v(num(int64(limit)))),
			ExpressionAttributeNames: ce.nameMap(), ExpressionAttributeValues: ce.valueMap(),
		}},
	}}
	if w.capacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	return in
}

// openReasons reads openStream's cancelled transaction: the marker
// existed, the count was full, or it met another transaction.
func openReasons(rs []types.CancellationReason) (marker, count, conflict bool) {
	for i, r := range rs {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i == 0 {
				marker = true
			} else {
				count = true
			}
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			conflict = true
		}
	}
	return marker, count, conflict || len(rs) == 0
}

// runSet is a bounded set of run IDs (forgotten all at once when full).
type runSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

const maxRunSet = 4096

func (s *runSet) has(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[runID]
	return ok
}

func (s *runSet) add(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxRunSet {
		s.m = map[string]struct{}{}
	}
	s.m[runID] = struct{}{}
}
