package watch

import (
	"context"
	"iter"
	"time"

	"github.com/skeinflow/skein/world"
)

// Watch watches s: with its own Watcher when it has one, otherwise with a
// Poller over its read API (default intervals).
func Watch(ctx context.Context, s world.Storage, p *world.WatchParams) iter.Seq2[world.WatchEvent, error] {
	if w, ok := s.(world.Watcher); ok {
		return w.Watch(ctx, p)
	}
	return (&Poller{Storage: s}).Watch(ctx, p)
}

// Cursor returns the cursor of the present for a watch of s (see
// world.Watcher.WatchCursor).
func Cursor(ctx context.Context, s world.Storage, p *world.WatchParams) (string, error) {
	if w, ok := s.(world.Watcher); ok {
		return w.WatchCursor(ctx, p)
	}
	return (&Poller{Storage: s}).WatchCursor(ctx, p)
}

// backoff is the wait between two looks of a polling watch.
type backoff struct{ cur, lo, hi time.Duration }

func newBackoff(lo, hi, defLo, defHi time.Duration) backoff {
	if lo <= 0 {
		lo = defLo
	}
	if hi <= 0 {
		hi = defHi
	}
	hi = max(hi, lo)
	return backoff{cur: lo, lo: lo, hi: hi}
}

// next returns the wait after a look that found something (found: the
// shortest wait) or not (the current wait, which then doubles).
func (b *backoff) next(found bool) time.Duration {
	if found {
		b.cur = b.lo
		return b.lo
	}
	d := b.cur
	b.cur = min(b.cur*2, b.hi)
	return d
}

// sleep waits d, or less when ctx ends or wake is closed; it returns the
// context's error.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-t.C:
	}
	return nil
}
