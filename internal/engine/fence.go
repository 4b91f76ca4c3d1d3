package engine

// Appends from outside a session's replay. A session commits what its
// replay of the log judged, fenced on the log it loaded (commit.go). The
// other writers of a run (a client's cancellation, a failure on request or
// after too many deliveries, a parent's cancellation of its children, and
// what follows a run's end: its cleanup, the outcomes that arrive after
// it, its compensations, run_deactivated) read no log of their own; before
// the fence each appended with no IfLastSeq, so that on a log missing
// some of its items (deleted behind the World) they wrote new events at,
// or after, the missing sequence numbers, and the log read dense again
// with another history. Each now reads the run's whole log through the
// World first, which checks it (on DynamoDB a missing range of commits is
// world.ErrCorrupt), and appends fenced on the last sequence number that
// read found (AppendFenced): a damaged run gets nothing written and the
// World's error back.

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinflow/skein/world"
)

// maxAppendFences bounds the fenced appends of AppendFenced when the run
// moves on between its read and its write (a live worker committing): past
// it the append fails, and its caller tries again later.
const maxAppendFences = 16

// CheckedLastSeq reads runID's whole log through s, page by page, and
// returns the sequence number of its newest event. A World checks what it
// reads (on DynamoDB a missing range of the log is world.ErrCorrupt), and
// the events must also be numbered 1, 2, 3 and so on: a gap the World did
// not report is world.ErrCorrupt too. A run with no event is
// world.ErrNotFound.
func CheckedLastSeq(ctx context.Context, s world.Storage, runID string) (int64, error) {
	var last int64
	for cursor := ""; ; {
		page, err := s.ListEvents(ctx, &world.ListEventsParams{RunID: runID, Pagination: world.Pagination{Limit: world.MaxPageLimit, Cursor: cursor}})
		if err != nil {
			return 0, err
		}
		for i := range page.Items {
			if seq := page.Items[i].Seq; seq != last+1 {
				return 0, fmt.Errorf("%w: run %s: its log reads event %d after event %d", world.ErrCorrupt, runID, seq, last)
			}
			last++
		}
		if !page.HasMore || len(page.Items) == 0 {
			break
		}
		cursor = page.Cursor
	}
	if last == 0 {
		return 0, fmt.Errorf("%w: run %s", world.ErrNotFound, runID)
	}
	return last, nil
}

// AppendFenced appends p's events to p.RunID's log after a checked read of
// the whole log (CheckedLastSeq), fenced on the last sequence number that
// read found (p.IfLastSeq is set here). A refused fence (another writer
// appended meanwhile: world.ErrConflict, not a *world.RefusalError) reads
// the log again, at most maxAppendFences times. A damaged log is the
// World's error (world.ErrCorrupt) and nothing is written; an event the
// run's state refuses is the *world.RefusalError (or *world.LimitError),
// as from Append. A run that keeps moving on past the bound is an untyped
// error (retry later).
func AppendFenced(ctx context.Context, s world.Storage, p *world.AppendParams) (*world.AppendResult, error) {
	q := *p
	for range maxAppendFences {
		last, err := CheckedLastSeq(ctx, s, q.RunID)
		if err != nil {
			return nil, err
		}
		q.IfLastSeq = last
		res, err := s.Append(ctx, &q)
		if !fenceRefused(err) {
			return res, err
		}
	}
	// Not world.ErrConflict, which callers take for a run that has ended.
	return nil, fmt.Errorf("engine: append to run %s: the run kept moving on (%d fenced appends refused)", q.RunID, maxAppendFences)
}

// fenceRefused reports whether err is Append's refusal of its IfLastSeq
// (world.ErrConflict, not an event's refusal).
func fenceRefused(err error) bool {
	return errors.Is(err, world.ErrConflict) && refusedEvent(err) == nil
}
