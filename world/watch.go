package world

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"
)

// Watcher is an optional Storage capability: the events of one run, or of
// every run, delivered as they commit. A World that has it pushes (the
// local world wakes its watchers at every commit) or polls its own cheaper
// reads (dynamoworld); Skein polls a World without it through its read
// API, with the same guarantees.
//
// The guarantees, for every Watcher:
//
//   - One run (WatchParams.RunID set): every event of the run after the
//     cursor, in sequence order, each once. The cursor is the run's
//     sequence number (RunCursor), the same for every World, so a cursor
//     from one Watcher resumes on another over the same data. The watch
//     ends after the run's terminal event.
//   - Every run (RunID empty): every event committed after the cursor, each
//     once, in sequence order within each run. Across runs the order, and
//     what the cursor is, belong to the World (the local world's is its
//     global commit order; a polling World's is a position per run and
//     the time of its last look). A cursor of another World, or another
//     run, is ErrInvalid.
//     What a run records after its end (late step results, its cleanup,
//     its compensations, run_deactivated) is delivered too: a polling
//     World follows a run it knows of until its run_deactivated, not just
//     until its terminal event.
//
// Types filters the events delivered; the cursor of a delivered event
// covers the filtered ones before it, so a resumed watch skips them too.
type Watcher interface {
	// Watch yields the events after p.After as they commit, each with the
	// cursor that resumes right after it. It ends when the consumer stops,
	// with the context's error, with an error of the World, or (one run)
	// after the run's terminal event. An empty After is the run's first
	// event for one run, and the present (WatchCursor at the start of the
	// iteration) for every run.
	Watch(ctx context.Context, p *WatchParams) iter.Seq2[WatchEvent, error]
	// WatchCursor returns the cursor of the present: a Watch after it
	// yields only what commits later. For one run it is RunCursor of the
	// run's LastSeq (ErrNotFound for a run that does not exist).
	WatchCursor(ctx context.Context, p *WatchParams) (string, error)
}

// WatchParams selects what a watch delivers.
type WatchParams struct {
	// RunID is the run to watch; empty watches every run.
	RunID string
	// Types keeps only events of these types; empty keeps every event.
	Types []EventType
	// After is a cursor from an earlier WatchEvent or WatchCursor.
	After string
	// PollMin and PollMax bound the wait between two looks of a World that
	// polls: PollMin after a look that found events, doubling while idle up
	// to PollMax. Zero means the World's defaults.
	PollMin, PollMax time.Duration
}

// Wants reports whether the watch delivers events of type t.
func (p *WatchParams) Wants(t EventType) bool {
	return len(p.Types) == 0 || slices.Contains(p.Types, t)
}

// Validate checks the run ID and the types.
func (p *WatchParams) Validate() error {
	if p == nil {
		return fmt.Errorf("%w: nil WatchParams", ErrInvalid)
	}
	if p.RunID != "" {
		if err := ValidateID(PrefixRun, p.RunID); err != nil {
			return err
		}
	}
	for _, t := range p.Types {
		if _, err := NewEventData(t); err != nil {
			return err
		}
	}
	if p.PollMin < 0 || p.PollMax < 0 {
		return fmt.Errorf("%w: negative poll interval", ErrInvalid)
	}
	return nil
}

// WatchEvent is one delivered event and the cursor right after it.
type WatchEvent struct {
	Event  Event
	Cursor string
}

// runCursorKind is the cursor kind of a one-run watch.
func runCursorKind(runID string) string { return "watch:" + runID }

// RunCursor is the cursor of a one-run watch positioned after the event
// with sequence number seq (0: before the first event).
func RunCursor(runID string, seq int64) string {
	return EncodeCursor(runCursorKind(runID), seq)
}

// ParseRunCursor returns the sequence number a one-run watch cursor is
// positioned after: 0 for an empty cursor, ErrInvalid for a malformed one
// or one of another run.
func ParseRunCursor(runID, cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	var seq int64
	if err := DecodeCursor(runCursorKind(runID), cursor, &seq); err != nil {
		return 0, err
	}
	if seq < 0 {
		return 0, fmt.Errorf("%w: malformed cursor position", ErrInvalid)
	}
	return seq, nil
}
