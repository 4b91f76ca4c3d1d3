package worldtest_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"

	"github.com/skeinflow/skein/internal/watch"
)

// A machine under load stalls a test between two calls. slowWorld plays
// such stalls, longer than any window the suite once measured on the wall
// clock (leases of 100-300ms, a watch or tail given 50-100ms to take its
// position):
//
//   - stallTime passes after every commit that starts an attempt or
//     schedules a retry, and after every lease taken or renewed: the
//     suite's Clock moves on by it (time passing, for all that judges
//     time on that clock), without the test waiting it out;
//   - a watch from the present and a tail from its end take their position
//     stallStart late, in real time (a goroutine scheduled late).
const (
	stallTime  = 2 * time.Second
	stallStart = 400 * time.Millisecond
)

// slowWorld is a correct memWorld on a busy machine (see stallTime).
type slowWorld struct {
	*memWorld
	clock *worldtest.Clock
}

// stalls reports whether an Append of evs is one after which the machine
// stalls.
func stalls(evs []world.EventInput) bool {
	for _, e := range evs {
		switch e.Data.(type) {
		case *world.StepStarted, *world.StepRetrying, *world.CompStarted, *world.CompRetryScheduled:
			return true
		}
	}
	return false
}

func (w slowWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	res, err := w.memWorld.Append(ctx, p)
	if p != nil && stalls(p.Events) {
		w.clock.Advance(stallTime)
	}
	return res, err
}

func (w slowWorld) AcquireRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	l, err := w.memWorld.AcquireRunLease(ctx, p)
	w.clock.Advance(stallTime)
	return l, err
}

func (w slowWorld) RenewRunLease(ctx context.Context, p *world.RunLeaseParams) (*world.RunLease, error) {
	l, err := w.memWorld.RenewRunLease(ctx, p)
	w.clock.Advance(stallTime)
	return l, err
}

func (w slowWorld) RenewStepLease(ctx context.Context, p *world.RenewStepLeaseParams) (*world.Step, error) {
	s, err := w.memWorld.RenewStepLease(ctx, p)
	w.clock.Advance(stallTime)
	return s, err
}

func (w slowWorld) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	time.Sleep(stallStart) // Tail from the end reads it first
	return w.memWorld.StreamInfo(ctx, p)
}

func (w slowWorld) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	return (&watch.Poller{Storage: w.memWorld}).WatchCursor(ctx, p)
}

func (w slowWorld) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	inner := (&watch.Poller{Storage: w.memWorld}).Watch(ctx, p)
	return func(yield func(world.WatchEvent, error) bool) {
		if p.RunID == "" && p.After == "" {
			time.Sleep(stallStart) // the present is taken late
		}
		for e, err := range inner {
			if !yield(e, err) {
				return
			}
		}
	}
}

// TestMemWorldSlowMachine: the suite passes against a correct World on a
// machine that stalls between a World's commit and the test's next call,
// as a loaded CI machine does. Cases that judged leases and retry times on
// the wall clock failed here (a lease lapsed before the check that it
// holds, a retry time passed before the check that it is early), and so
// did cases that gave a watch or a tail a fixed time to take its position.
func TestMemWorldSlowMachine(t *testing.T) {
	worldtest.Run(t, worldtest.Options{New: func(t *testing.T) worldtest.Subject {
		w, clock := newMemWorld(""), new(worldtest.Clock)
		w.now = clock.Now
		s := slowWorld{memWorld: w, clock: clock}
		return worldtest.Subject{World: s, Consumer: s, Clock: clock}
	}})
}

var (
	_ world.Watcher        = slowWorld{}
	_ world.StreamNotifier = slowWorld{}
)
