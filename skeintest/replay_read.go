package skeintest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/skeinflow/skein/world"
)

// History is one run's recorded event log, as read from a history file.
type History struct {
	RunID  string
	Events []world.Event
	// Line is the line of the file where the run's first event is (1-based).
	Line int
}

// HistoryFileError reports a history file that cannot be read: not JSON
// lines of events, or not whole runs' logs. Line and Offset (the byte
// where the line starts) say where; both are zero for a file without any
// event.
type HistoryFileError struct {
	File   string
	Line   int
	Offset int64
	Err    error
}

func (e *HistoryFileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("skeintest: history %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("skeintest: history %s:%d (byte %d): %v", e.File, e.Line, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *HistoryFileError) Unwrap() error { return e.Err }

// errEmpty is the cause of a HistoryFileError for a file without events.
var errEmpty = errors.New("no events (a history holds one JSON event per line, as `skein runs events` prints them)")

// ReadHistories reads a history file: one JSON event per line, as `skein
// runs events -show-tokens <runId>` prints a run's log and `skein runs
// export` writes it (without -show-tokens the run's secret is left out, and
// the check of a run whose hook tokens derive from it is a *NoTokensError). A file may hold several runs, each run's events whole (from its
// run_created) and in sequence order; runs may follow or interleave with
// each other. Blank lines are skipped. name names the file in errors, which
// are *HistoryFileError.
func ReadHistories(r io.Reader, name string) ([]History, error) {
	br := bufio.NewReader(r)
	var (
		runs   []History
		byRun  = map[string]int{}
		line   int
		offset int64
	)
	for {
		b, err := br.ReadBytes('\n')
		if line == 0 && bytes.HasPrefix(b, []byte(utf8BOM)) {
			// A byte order mark, as editors and shells on Windows write.
			b, offset = b[len(utf8BOM):], int64(len(utf8BOM))
		}
		if len(b) > 0 {
			line++
			if perr := addEvent(&runs, byRun, b, line); perr != nil {
				return nil, &HistoryFileError{File: name, Line: line, Offset: offset, Err: perr}
			}
			offset += int64(len(b))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &HistoryFileError{File: name, Line: line, Offset: offset, Err: err}
		}
	}
	if len(runs) == 0 {
		return nil, &HistoryFileError{File: name, Err: errEmpty}
	}
	return runs, nil
}

// addEvent decodes one line and adds its event to its run's history.
func addEvent(runs *[]History, byRun map[string]int, b []byte, line int) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	if b[0] != '{' {
		return fmt.Errorf("not a JSON object (a history holds one JSON event per line, as `skein runs events` prints them)")
	}
	var ev world.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("not a valid event: %w", err)
	}
	if ev.RunID == "" {
		return fmt.Errorf("%s event without a runId", ev.Type())
	}
	i, ok := byRun[ev.RunID]
	if !ok {
		i = len(*runs)
		byRun[ev.RunID] = i
		*runs = append(*runs, History{RunID: ev.RunID, Line: line})
	}
	h := &(*runs)[i]
	if want := int64(len(h.Events) + 1); ev.Seq != want {
		if want == 1 {
			return fmt.Errorf("run %s begins at event %d (%s): a history holds a run's whole log, from its run_created (seq 1)",
				ev.RunID, ev.Seq, ev.Type())
		}
		return fmt.Errorf("run %s: event %d (%s) follows event %d (a history holds a run's events in order, none missing)",
			ev.RunID, ev.Seq, ev.Type(), want-1)
	}
	if err := world.ValidateEvent(ev); err != nil {
		return fmt.Errorf("run %s: event %d (%s): %w", ev.RunID, ev.Seq, ev.Type(), err)
	}
	if _, created := ev.Data.(*world.RunCreated); created != (ev.Seq == 1) {
		return fmt.Errorf("run %s: event %d is %s (a run's log begins with its one run_created)", ev.RunID, ev.Seq, ev.Type())
	}
	h.Events = append(h.Events, ev)
	return nil
}

// WriteHistory writes a run's events in the format ReadHistories reads and
// `skein runs events -show-tokens` prints: one JSON object per line.
func WriteHistory(w io.Writer, events []world.Event) error {
	enc := json.NewEncoder(w)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}

// utf8BOM is the UTF-8 byte order mark a history file may start with.
const utf8BOM = "\xEF\xBB\xBF"
