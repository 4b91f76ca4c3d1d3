package skeintest

import (
	"context"

	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/world"
)

// consumer is the Worker's view of the queue: localworld's, except that a
// receive with nothing visible waits for the virtual clock (or an enqueue, a
// release) instead of real timers, and tells the driver it is idle.
type consumer struct {
	lw *localworld.World
	d  *driver
}

var _ world.Consumer = (*consumer)(nil)

// Receive returns the messages visible at the virtual now, waiting as long
// as it takes (p.Wait is ignored: only the clock, the queue or ctx end the
// wait).
func (c *consumer) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	c.d.handled()
	for {
		moved := c.d.clockMoved()
		next, changed, err := c.lw.NextVisible(ctx)
		if err != nil {
			return nil, err
		}
		if !next.IsZero() && !next.After(c.d.Now()) {
			ds, err := c.lw.Receive(ctx, &world.ReceiveParams{Max: p.Max, Visibility: p.Visibility})
			if err != nil || len(ds) > 0 {
				return ds, err
			}
			continue // another receiver was faster
		}
		c.d.enterIdle()
		select {
		case <-ctx.Done():
		case <-changed:
		case <-moved:
		}
		c.d.leaveIdle()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func (c *consumer) Ack(ctx context.Context, p *world.AckParams) error { return c.lw.Ack(ctx, p) }

func (c *consumer) Release(ctx context.Context, p *world.ReleaseParams) error {
	return c.lw.Release(ctx, p)
}

func (c *consumer) Extend(ctx context.Context, p *world.ExtendParams) error {
	return c.lw.Extend(ctx, p)
}
