package handler_test

import (
	"context"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// statusOf returns a run's status (what Run.Status returned).
func statusOf[O any](ctx context.Context, r *client.Run[O]) (world.RunStatus, error) {
	info, err := r.Info(ctx)
	if err != nil {
		return "", err
	}
	return info.Status, nil
}

// statusOfID returns the status of run id (what Client.Status returned).
func statusOfID(ctx context.Context, c *client.Client, id string) (world.RunStatus, error) {
	info, err := c.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	return info.Status, nil
}
