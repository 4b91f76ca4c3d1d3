package localworld

import (
	"bytes"
	"context"

	"github.com/skeinflow/skein/world"
)

// ListEvents lists a run's events in sequence order (reverse with
// Descending). The cursor of the last page resumes exactly after its last
// event, so a reader polling with it gets every event appended since.
func (w *store) ListEvents(ctx context.Context, p *world.ListEventsParams) (*world.Page[world.Event], error) {
	if p == nil || p.RunID == "" {
		return nil, invalid("run ID required")
	}
	l := listing{kind: "events:" + p.RunID, bucket: bEvents, prefix: newKey().str(p.RunID), desc: p.Descending, page: p.Pagination}
	var page *world.Page[world.Event]
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		page, err = scanPage(tx, l, func(suffix, v []byte) (world.Event, bool, error) {
			var ev world.Event
			if err := decode(bEvents, nil, v, &ev); err != nil {
				return world.Event{}, false, decode(bEvents, append(bytes.Clone(l.prefix), suffix...), v, &ev)
			}
			return ev, true, nil
		})
		return err
	})
	return page, err
}

// ListEventsByCorrelation lists the events of one step, hook or wait in
// sequence order. Without a RunID it lists the correlation ID's events in
// every run (run by run).
func (w *store) ListEventsByCorrelation(ctx context.Context, p *world.ListEventsByCorrelationParams) (*world.Page[world.Event], error) {
	if p == nil || p.CorrelationID == "" {
		return nil, invalid("correlation ID required")
	}
	l := listing{
		kind:   "events:" + p.RunID + ":" + p.CorrelationID,
		bucket: bEventsByCorr, prefix: newKey().str(p.CorrelationID),
		desc: p.Descending, page: p.Pagination, chunked: true,
	}
	if p.RunID != "" {
		l.prefix = key(l.prefix).str(p.RunID)
	}
	var page *world.Page[world.Event]
	err := w.view(ctx, func(tx kvTx) error {
		var err error
		page, err = scanPage(tx, l, func(suffix, _ []byte) (world.Event, bool, error) {
			runID := p.RunID
			if runID == "" {
				var ok bool
				if runID, suffix, ok = readStr(suffix); !ok {
					return world.Event{}, false, nil
				}
			}
			seq, _, ok := readU64(suffix)
			if !ok {
				return world.Event{}, false, nil
			}
			k := eventKey(runID, int64(seq))
			ev, err := getJSON[world.Event](tx, bEvents, k)
			switch {
			case err != nil:
				return world.Event{}, false, err
			case ev == nil || ev.CorrelationID != p.CorrelationID:
				// Events are never deleted: the index names another's.
				return world.Event{}, false, corruptRead(bEventsByCorr, l.prefix,
					"the index of correlation %q names the event %s/%d, which is not one of its", p.CorrelationID, runID, seq)
			}
			return *ev, true, nil
		})
		return err
	})
	return page, err
}
