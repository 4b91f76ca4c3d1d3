package main

import (
	"context"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/world"
)

// statusOfID returns the status of run id (what Client.Status returned).
func statusOfID(ctx context.Context, c *client.Client, id string) (world.RunStatus, error) {
	info, err := c.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	return info.Status, nil
}
