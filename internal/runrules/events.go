package runrules

import (
	"context"

	"github.com/skeinflow/skein/world"
)

// AllEvents reads a run's whole log, page by page (world.MaxPageLimit
// events each), in sequence order.
func AllEvents(ctx context.Context, s world.Storage, runID string) ([]world.Event, error) {
	var out []world.Event
	for cursor := ""; ; {
		page, err := s.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if !page.HasMore {
			return out, nil
		}
		cursor = page.Cursor
	}
}
