package worldtest_test

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/world"
	"github.com/skeinflow/skein/world/worldtest"

	"github.com/skeinflow/skein/internal/watch"
)

// laggingSource is a watch.PollSource over a memWorld that plays an
// eventually consistent store read in small batches, as dynamoworld's is:
// every third read of a run finds nothing new yet, the others return at
// most two events (More when there were more). Its runs carry only RunID
// and CreatedAt, and its positions a Key of its own, which it checks the
// Poller hands back unchanged.
type laggingSource struct {
	w     *memWorld
	reads atomic.Int64
}

// key is the source's own Key of the position after event seq.
func key(seq int64) int64 { return seq*10 + 7 }

func (s *laggingSource) PollRuns(ctx context.Context, since time.Time) ([]world.Run, error) {
	var out []world.Run
	add := func(p *world.ListRunsParams, stop func(world.Run) bool) error {
		p.Limit = world.MaxPageLimit
		for {
			pg, err := s.w.ListRuns(ctx, p)
			if err != nil {
				return err
			}
			for _, r := range pg.Items {
				if stop(r) {
					return nil
				}
				out = append(out, world.Run{RunID: r.RunID, CreatedAt: r.CreatedAt})
			}
			if !pg.HasMore {
				return nil
			}
			p.Cursor = pg.Cursor
		}
	}
	for _, st := range []world.RunStatus{world.RunStatusPending, world.RunStatusRunning, world.RunStatusHeld} {
		if err := add(&world.ListRunsParams{Status: st}, func(world.Run) bool { return false }); err != nil {
			return nil, err
		}
	}
	err := add(&world.ListRunsParams{}, func(r world.Run) bool { return r.CreatedAt.Before(since) })
	return out, err
}

func (s *laggingSource) PollRun(ctx context.Context, runID string, at watch.PollPos) (*watch.PollRead, error) {
	if at.Seq < 0 || at.Key < 0 {
		r, err := s.w.GetRun(ctx, &world.GetRunParams{RunID: runID})
		if err != nil {
			return nil, err
		}
		if at.Seq < 0 {
			at.Seq = r.LastSeq
		}
		end := at.Seq >= r.LastSeq
		return &watch.PollRead{At: watch.PollPos{Seq: at.Seq, Key: key(at.Seq)}, Ended: end && r.Status.Terminal(), Rest: end && r.Deactivated()}, nil
	}
	if at.Key != key(at.Seq) && at != (watch.PollPos{}) {
		return nil, fmt.Errorf("the Poller read from %+v, a position the source never returned", at)
	}
	rd := &watch.PollRead{At: watch.PollPos{Seq: at.Seq, Key: key(at.Seq)}}
	if s.reads.Add(1)%3 == 0 {
		return rd, nil // not visible yet
	}
	evs, err := watch.EventsAfter(ctx, s.w, runID, at.Seq)
	if err != nil {
		return nil, err
	}
	if len(evs) > 2 {
		evs, rd.More = evs[:2], true
	}
	for _, e := range evs {
		rd.Events = append(rd.Events, e)
		rd.At = watch.PollPos{Seq: e.Seq, Key: key(e.Seq)}
		rd.After = append(rd.After, rd.At)
	}
	return rd, nil
}

// laggingWorld is a memWorld watched by a watch.Poller through a
// laggingSource.
type laggingWorld struct {
	*memWorld
	src *laggingSource
}

func (w laggingWorld) poller() *watch.Poller {
	return &watch.Poller{Storage: w.memWorld, Source: w.src}
}

func (w laggingWorld) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	return w.poller().WatchCursor(ctx, p)
}

func (w laggingWorld) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	return w.poller().Watch(ctx, p)
}

var _ world.Watcher = laggingWorld{}

// TestPollerLaggingSource: the suite passes against a World watched by a
// Poller through a PollSource that lags and reads in small batches.
func TestPollerLaggingSource(t *testing.T) {
	worldtest.Run(t, worldtest.Options{New: func(t *testing.T) worldtest.Subject {
		w, clock := newMemWorld(""), new(worldtest.Clock)
		w.now = clock.Now
		lw := laggingWorld{memWorld: w, src: &laggingSource{w: w}}
		return worldtest.Subject{World: lw, Consumer: lw, Clock: clock}
	}})
}
