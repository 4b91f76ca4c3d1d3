package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// limitWorld takes at most max events in one Append, as dynamoworld takes
// at most one DynamoDB transaction: it refuses bigger commits as invalid
// and says so through world.AppendLimiter.
type limitWorld struct {
	*localworld.World
	max     int
	largest atomic.Int64
}

func (l *limitWorld) AppendFits(events []world.EventInput) int { return min(len(events), l.max) }

func (l *limitWorld) Append(ctx context.Context, p *world.AppendParams) (*world.AppendResult, error) {
	if len(p.Events) > l.max {
		return nil, fmt.Errorf("%w: %d events in one commit, at most %d", world.ErrInvalid, len(p.Events), l.max)
	}
	for n := int64(len(p.Events)); ; {
		old := l.largest.Load()
		if n <= old || l.largest.CompareAndSwap(old, n) {
			break
		}
	}
	return l.World.Append(ctx, p)
}

// A suspension bigger than the World's Append takes (a wide fan-out, many
// waits) is committed in several fenced Appends, and the run completes
// exactly as with one: each step completed once.
func TestCommitSplitsForTheWorldsLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limit  int
		inline int
	}{
		{"limit 1", 1, 4},
		{"limit 5, inline 4", 5, 4},
		{"limit 7, inline 16", 7, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var lw *limitWorld
			h := newHarness(t, func(w *localworld.World) world.World { lw = &limitWorld{World: w, max: tc.limit}; return lw },
				Config{Options: Options{InlineConcurrency: tc.inline}})
			h.reg.step("add", 0, addStep)
			h.reg.wf("wide", func(c *Context, in json.RawMessage) (json.RawMessage, error) {
				var fs []*Future
				for i := range 40 {
					fs = append(fs, c.Step("add", mustJSON([2]int{i, 1})))
				}
				var ws []*Future
				for range 9 {
					ws = append(ws, c.Sleep(time.Millisecond))
				}
				c.Await(func() bool {
					for _, f := range append(fs, ws...) {
						if !f.Done() {
							return false
						}
					}
					return true
				})
				sum := 0
				for _, f := range fs {
					r, _ := f.Result()
					var v int
					_ = json.Unmarshal(r, &v)
					sum += v
				}
				return mustJSON(sum), nil
			})
			h.work(2, nil)
			id := h.start("wide", nil)
			run := h.wait(id)
			if run.Status != world.RunStatusCompleted || string(run.Output) != "820" {
				t.Fatalf("run = %s %s %+v, want completed with 820", run.Status, run.Output, run.Error)
			}
			evs := h.events(id)
			done := map[string]int{}
			for _, ev := range evs {
				if ev.Type() == world.EventStepCompleted {
					done[ev.CorrelationID]++
				}
			}
			if len(done) != 40 {
				t.Fatalf("%d steps completed, want 40", len(done))
			}
			for id, n := range done {
				if n != 1 {
					t.Errorf("step %s completed %d times", id, n)
				}
			}
			if got := lw.largest.Load(); got > int64(tc.limit) || got == 0 {
				t.Errorf("largest Append %d events, limit %d", got, tc.limit)
			}
		})
	}
}
