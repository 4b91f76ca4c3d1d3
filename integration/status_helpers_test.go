//go:build integration

package integration

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
