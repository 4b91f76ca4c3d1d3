//go:build integration

package integration

import (
	"context"

	workflow "github.com/skeinflow/skein/internal/sdk"
	"github.com/skeinflow/skein/world"
)

// statusOf returns a run's status (what Run.Status returned).
func statusOf[O any](ctx context.Context, r *workflow.Run[O]) (world.RunStatus, error) {
	info, err := r.Info(ctx)
	if err != nil {
		return "", err
	}
	return info.Status, nil
}
