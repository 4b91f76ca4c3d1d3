package dynamoworld

import (
	"context"

	"github.com/skeinflow/skein/world"
)

// The World's Streamer methods delegate to Config.Streams (by default a
// streams.Streamer on the same bucket).

var _ world.StreamNotifier = (*World)(nil)

// WriteStream appends chunks to a stream (see streams.Streamer).
func (w *World) WriteStream(ctx context.Context, p *world.WriteStreamParams) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.ss.WriteStream(ctx, p)
}

// CloseStream closes a stream.
func (w *World) CloseStream(ctx context.Context, p *world.CloseStreamParams) error {
	if err := w.enter(ctx); err != nil {
		return err
	}
	defer w.leave()
	return w.ss.CloseStream(ctx, p)
}

// ReadStream reads chunks of a stream.
func (w *World) ReadStream(ctx context.Context, p *world.ReadStreamParams) (*world.StreamPage, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.ss.ReadStream(ctx, p)
}

// StreamInfo describes a stream.
func (w *World) StreamInfo(ctx context.Context, p *world.StreamInfoParams) (*world.StreamInfo, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.ss.StreamInfo(ctx, p)
}

// ListStreams lists a run's streams.
func (w *World) ListStreams(ctx context.Context, p *world.ListStreamsParams) ([]string, error) {
	if err := w.enter(ctx); err != nil {
		return nil, err
	}
	defer w.leave()
	return w.ss.ListStreams(ctx, p)
}

// StreamChanged is closed at the next write to or close of the stream made
// through this World (other writers are seen by polling: world.Tail), when
// the Streamer is a world.StreamNotifier; otherwise it is never closed.
func (w *World) StreamChanged(runID, name string) <-chan struct{} {
	if n, ok := w.ss.(world.StreamNotifier); ok {
		return n.StreamChanged(runID, name)
	}
	return nil
}
