package encrypt

import (
	"context"
	"iter"

	"github.com/skeinflow/skein/world"

	"github.com/skeinflow/skein/internal/watch"
)

// The wrapper is a world.Watcher: the wrapped World's own watcher (pushed
// on the local world) when it has one, else polling through the wrapper's
// reads; either way the events come out opened.
var _ world.Watcher = (*sealedWorld)(nil)

// Watch yields the wrapped World's events as they commit, their payloads
// opened.
func (w *sealedWorld) Watch(ctx context.Context, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	inner, ok := w.inner.(world.Watcher)
	if !ok {
		return (&watch.Poller{Storage: w}).Watch(ctx, p)
	}
	return func(yield func(world.WatchEvent, error) bool) {
		for we, err := range inner.Watch(ctx, p) {
			if err == nil {
				var ev *world.Event
				if ev, err = w.openEvent(ctx, &we.Event); err == nil {
					we.Event = *ev
				}
			}
			if !yield(we, err) || err != nil {
				return
			}
		}
	}
}

// WatchCursor is the wrapped World's (or the poller's) cursor of the
// present.
func (w *sealedWorld) WatchCursor(ctx context.Context, p *world.WatchParams) (string, error) {
	if inner, ok := w.inner.(world.Watcher); ok {
		return inner.WatchCursor(ctx, p)
	}
	return (&watch.Poller{Storage: w}).WatchCursor(ctx, p)
}
