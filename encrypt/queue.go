package encrypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// Queue messages name runs and steps only: they pass through.

func (w *sealedWorld) Enqueue(ctx context.Context, p *world.EnqueueParams) (*world.EnqueueResult, error) {
	return w.inner.Enqueue(ctx, p)
}

var errNotConsumer = errors.New("encrypt: the wrapped World is not a queue consumer")

func (w *sealedWorld) consumer() (world.Consumer, error) {
	c, ok := w.inner.(world.Consumer)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", errNotConsumer, w.inner)
	}
	return c, nil
}

func (w *sealedWorld) Receive(ctx context.Context, p *world.ReceiveParams) ([]world.Delivery, error) {
	c, err := w.consumer()
	if err != nil {
		return nil, err
	}
	return c.Receive(ctx, p)
}

func (w *sealedWorld) Ack(ctx context.Context, p *world.AckParams) error {
	c, err := w.consumer()
	if err != nil {
		return err
	}
	return c.Ack(ctx, p)
}

func (w *sealedWorld) Release(ctx context.Context, p *world.ReleaseParams) error {
	c, err := w.consumer()
	if err != nil {
		return err
	}
	return c.Release(ctx, p)
}

func (w *sealedWorld) Extend(ctx context.Context, p *world.ExtendParams) error {
	c, err := w.consumer()
	if err != nil {
		return err
	}
	return c.Extend(ctx, p)
}

// Streams: each chunk sealed on its own with the run's data key.

func (w *sealedWorld) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	k, err := w.runKey(ctx, p.RunID)
	if err != nil && !errors.Is(err, world.ErrNotFound) {
		return err
	}
	if k == nil {
		return w.inner.WriteStream(ctx, p)
	}
	q := *p
	q.Chunks = make([][]byte, len(p.Chunks))
	for i, c := range p.Chunks {
		if q.Chunks[i], err = k.sealPayload(p.RunID, place{field: fieldStream, entity: p.Name}, c, false); err != nil {
			return err
		}
	}
	return w.inner.WriteStream(ctx, &q)
}

func (w *sealedWorld) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	page, err := w.inner.ReadStream(ctx, p)
	if err != nil {
		return nil, err
	}
	k, err := w.runKey(ctx, p.RunID)
	if err != nil {
		if w.leave(err) {
			return page, nil
		}
		return nil, err
	}
	out := *page
	out.Chunks = make([]world.StreamChunk, len(page.Chunks))
	at := place{field: fieldStream, entity: p.Name}
	for i, c := range page.Chunks {
		out.Chunks[i] = c
		if out.Chunks[i].Data, err = w.open(p.RunID, k, at, c.Data, true); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

func (w *sealedWorld) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	return w.inner.CloseStream(ctx, p)
}

func (w *sealedWorld) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	return w.inner.StreamInfo(ctx, p)
}

func (w *sealedWorld) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	return w.inner.ListStreams(ctx, p)
}
