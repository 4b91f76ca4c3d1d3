package worldtest_test

import (
	"context"
	"iter"
	"strings"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// brokenWatcher is a memWorld with a world.Watcher that has one bug: the
// watch group's mutants. (memWorld itself has no Watcher: the suite checks
// watch.Poller on it.)
type brokenWatcher struct {
	*memWorld
	bug string
}

func isWatchBug(bug string) bool { return strings.HasPrefix(bug, "watch-") }

func (b brokenWatcher) poller() *watch.Poller { return &watch.Poller{Storage: b.memWorld} }

func (b brokenWatcher) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	return b.poller().WatchCursor(ctx, p)
}

func (b brokenWatcher) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	q := *p
	switch b.bug {
	case "watch-resume-from-start":
		q.After = "" // resuming delivers again what was delivered
	case "watch-no-types":
		q.Types = nil
	}
	inner := b.poller().Watch(ctx, &q)
	return func(yield func(world.WatchEvent, error) bool) {
		for e, err := range inner {
			if !yield(e, err) {
				return
			}
			if err == nil && b.bug == "watch-no-end" && e.Event.Type().Terminal() {
				<-ctx.Done() // keeps going after the run's end
				yield(world.WatchEvent{}, ctx.Err())
				return
			}
		}
	}
}
