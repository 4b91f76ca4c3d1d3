package dynamoworld_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"
)

// TestConformanceTwoProcesses runs the suite with every call going, in
// turn, to one of two Worlds on the same table, queue and bucket. Each has
// its own cache and its own per-run locks, so their snapshots go stale and
// their commits (and stream writes) race through DynamoDB's conditions and
// S3's conditional puts, as two processes would. After every first page of
// events, what the reading World cached of the run (prime.go) is checked
// against a fresh read.
func TestConformanceTwoProcesses(t *testing.T) {
	dynamotest.Require(t)
	worldtest.Run(t, worldtest.Options{
		New: func(t *testing.T) worldtest.Subject {
			c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
			r, url := dynamotest.NewResources(t, c)
			p := &pair{t: t}
			// One clock for both "processes", as one wall clock would be.
			clock := new(worldtest.Clock)
			for i := range p.ws {
				cfg := dynamotest.Config(c, r, url)
				cfg.Limits = suiteLimits
				w, err := dynamoworld.New(context.Background(), cfg, knobs.WithNow(clock.Now))
				if err != nil {
					t.Fatal(err)
				}
				p.ws[i] = w
			}
			return worldtest.Subject{World: p, Consumer: p, Clock: clock, AbandonClaim: dynamoworld.AbandonClaim(p.ws[1])}
		},
		Racers: 16,
		Slow:   1,
	})
}

// pair is a world.World that sends each call to the next of two Worlds.
type pair struct {
	ws [2]*dynamoworld.World
	n  atomic.Uint64
	t  *testing.T
}

func (p *pair) w() *dynamoworld.World { return p.ws[p.n.Add(1)%2] }

func (p *pair) Limits() world.Limits { return p.ws[0].Limits() }

func (p *pair) Close() error { return errors.Join(p.ws[0].Close(), p.ws[1].Close()) }

func (p *pair) Append(ctx context.Context, a *world.AppendParams) (*world.AppendResult, error) {
	return p.w().Append(ctx, a)
}

// AppendFits is either World's: a pure function of the events.
func (p *pair) AppendFits(evs []world.EventInput) int { return p.ws[0].AppendFits(evs) }

func (p *pair) GetRun(ctx context.Context, a *world.GetRunParams) (*world.Run, error) {
	return p.w().GetRun(ctx, a)
}
func (p *pair) ListRuns(ctx context.Context, a *world.ListRunsParams) (*world.Page[world.Run], error) {
	return p.w().ListRuns(ctx, a)
}
func (p *pair) GetStep(ctx context.Context, a *world.GetStepParams) (*world.Step, error) {
	return p.w().GetStep(ctx, a)
}
func (p *pair) ListSteps(ctx context.Context, a *world.ListStepsParams) (*world.Page[world.Step], error) {
	return p.w().ListSteps(ctx, a)
}

// ListEvents also checks, after a first page (a read of a whole log caches
// the run, a read back from its end brings the cached run forward, see
// prime.go), that what the World caches of the run is what a fresh read
// finds.
func (p *pair) ListEvents(ctx context.Context, a *world.ListEventsParams) (*world.Page[world.Event], error) {
	w := p.w()
	page, err := w.ListEvents(ctx, a)
	if err == nil && a != nil && a.Cursor == "" && p.t != nil {
		// A watch's poll may end (its context cancelled) right after the
		// read; the check is the test's own and runs to its end.
		if diff, err := dynamoworld.CheckCached(context.WithoutCancel(ctx), w, a.RunID, false); err != nil || diff != "" {
			p.t.Errorf("run %s: the cached snapshot differs from a fresh read: %.2000s (%v)", a.RunID, diff, err)
		}
	}
	return page, err
}
func (p *pair) ListEventsByCorrelation(ctx context.Context, a *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	return p.w().ListEventsByCorrelation(ctx, a)
}
func (p *pair) GetHook(ctx context.Context, a *world.GetHookParams) (*world.Hook, error) {
	return p.w().GetHook(ctx, a)
}
func (p *pair) GetHookByToken(ctx context.Context, a *world.GetHookByTokenParams) (*world.Hook, error) {
	return p.w().GetHookByToken(ctx, a)
}
func (p *pair) ListHooks(ctx context.Context, a *world.ListHooksParams) (*world.Page[world.Hook], error) {
	return p.w().ListHooks(ctx, a)
}
func (p *pair) AcquireRunLease(ctx context.Context, a *world.RunLeaseParams) (*world.RunLease, error) {
	return p.w().AcquireRunLease(ctx, a)
}
func (p *pair) RenewRunLease(ctx context.Context, a *world.RunLeaseParams) (*world.RunLease, error) {
	return p.w().RenewRunLease(ctx, a)
}
func (p *pair) ReleaseRunLease(ctx context.Context, a *world.RunLeaseParams) error {
	return p.w().ReleaseRunLease(ctx, a)
}
func (p *pair) RenewStepLease(ctx context.Context, a *world.RenewStepLeaseParams) (*world.Step, error) {
	return p.w().RenewStepLease(ctx, a)
}
func (p *pair) Enqueue(ctx context.Context, a *world.EnqueueParams) (*world.EnqueueResult, error) {
	return p.w().Enqueue(ctx, a)
}
func (p *pair) Receive(ctx context.Context, a *world.ReceiveParams) ([]world.Delivery, error) {
	return p.w().Receive(ctx, a)
}
func (p *pair) Ack(ctx context.Context, a *world.AckParams) error { return p.w().Ack(ctx, a) }
func (p *pair) Release(ctx context.Context, a *world.ReleaseParams) error {
	return p.w().Release(ctx, a)
}
func (p *pair) Extend(ctx context.Context, a *world.ExtendParams) error {
	return p.w().Extend(ctx, a)
}
func (p *pair) WriteStream(ctx context.Context, a *world.WriteStreamParams) error {
	return p.w().WriteStream(ctx, a)
}
func (p *pair) CloseStream(ctx context.Context, a *world.CloseStreamParams) error {
	return p.w().CloseStream(ctx, a)
}
func (p *pair) ReadStream(ctx context.Context, a *world.ReadStreamParams) (*world.StreamPage, error) {
	return p.w().ReadStream(ctx, a)
}
func (p *pair) StreamInfo(ctx context.Context, a *world.StreamInfoParams) (*world.StreamInfo, error) {
	return p.w().StreamInfo(ctx, a)
}
func (p *pair) ListStreams(ctx context.Context, a *world.ListStreamsParams) ([]string, error) {
	return p.w().ListStreams(ctx, a)
}

// StreamChanged fires when either World sees the stream change.
func (p *pair) StreamChanged(runID, name string) <-chan struct{} {
	a, b := p.ws[0].StreamChanged(runID, name), p.ws[1].StreamChanged(runID, name)
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}
