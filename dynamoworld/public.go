package dynamoworld

import (
	"context"

	"github.com/skeinflow/skein/world"
)

var (
	_ world.World          = (*World)(nil)
	_ world.Consumer       = (*World)(nil)
	_ world.Watcher        = (*World)(nil)
	_ world.StreamNotifier = (*World)(nil)
	_ world.AppendLimiter  = (*World)(nil)
)

// World is Skein's World on AWS: storage in one DynamoDB table, the queue on
// SQS, payloads over the claim-check threshold and output streams on S3. It
// is safe for concurrent use; many Worlds (processes, Lambda instances) may
// share the same table, queue and bucket.
//
// Its methods are those of the interfaces it embeds, documented there (a
// world.World; the consumer of its SQS queue, world.Consumer; a
// world.Watcher that polls the table; a world.StreamNotifier; a
// world.AppendLimiter that sizes commits to DynamoDB's transactions), and
// the ones below. What they do on AWS:
//   - Append is one TransactWriteItems fenced on the run's last sequence
//     number; a refusal is world.Apply's on the current state (a stale
//     snapshot is read again and judged again).
//   - Enqueue with an IdempotencyKey claims the key in the table (for
//     Config.DedupeWindow) before the send and confirms it after; a claim
//     not confirmed within 30s (the pending grace) is refused with
//     world.ErrKeyPending, and taken over after it: at least once, never
//     lost.
//   - Receive does not return a message due after SQS's 15-minute delay: it
//     sends it again for the time left (or drops it when its run has
//     finished or does not exist). Release and Extend round to whole
//     seconds (ChangeMessageVisibility).
//   - Close stops the World from accepting calls and waits for those in
//     flight, a Receive's long poll included (up to its wait). It deletes
//     nothing; closing twice is not an error.
//   - Watch polls (50ms to 2s for one run, or the watch's own bounds); a
//     stream's StreamChanged is closed by writes through this World only
//     (other writers are seen by polling: world.Tail).
type World struct {
	world.World
	world.Consumer
	world.Watcher
	world.StreamNotifier
	world.AppendLimiter
	s *store
}

// newWorld is the World of s.
func newWorld(s *store) *World {
	return &World{World: s, Consumer: s, Watcher: s, StreamNotifier: s, AppendLimiter: s, s: s}
}

// Check verifies that the table (with its indexes and of this World's
// SchemaVersion), the queue and the bucket exist and can be reached. Its
// errors name the service and the resource.
func (w *World) Check(ctx context.Context) error { return w.s.Check(ctx) }

// Config returns the World's configuration, defaults applied.
func (w *World) Config() Config { return w.s.Config() }

// Limits returns the limits the World enforces on every run (Config.Limits
// with defaults).
func (w *World) Limits() world.Limits { return w.s.Limits() }

// ReportCapacity makes every DynamoDB request ask for its consumed capacity
// (ReturnConsumedCapacity TOTAL), added up in Stats. For benchmarks.
func (w *World) ReportCapacity() { w.s.ReportCapacity() }

// Stats returns the capacity consumed so far (see ReportCapacity).
func (w *World) Stats() Stats { return w.s.Stats() }

// PutDelivery stores a queued webhook request under its delivery ID
// (worker.Inbox), at Prefix+"inbox/"+id in the bucket.
func (w *World) PutDelivery(ctx context.Context, id string, data []byte) error {
	return w.s.PutDelivery(ctx, id, data)
}

// GetDelivery returns the request PutDelivery stored under id, or an
// error wrapping world.ErrNotFound.
func (w *World) GetDelivery(ctx context.Context, id string) ([]byte, error) {
	return w.s.GetDelivery(ctx, id)
}

// DeleteDelivery removes the request stored under id; a missing one is not
// an error. With an S3 client that cannot delete objects, it leaves it to
// the bucket's lifecycle rule.
func (w *World) DeleteDelivery(ctx context.Context, id string) error {
	return w.s.DeleteDelivery(ctx, id)
}

// CheckSchema verifies that the table is of this World's SchemaVersion:
// one consistent GetItem when the table records its version. A table
// without the record is claimed (the item put on its absence) when it
// holds no run, and refused otherwise. Check (so New) calls it; a process that skips the other checks (a
// Lambda function, whose stack made the resources) may call it alone.
func (w *World) CheckSchema(ctx context.Context) error { return w.s.CheckSchema(ctx) }
