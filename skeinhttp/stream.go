package skeinhttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/internal/redact"
)

// stream writes Server-Sent Events. The first write error sticks (err)
// and makes every later write a no-op.
type stream struct {
	w      io.Writer
	rc     *http.ResponseController
	redact bool
	err    error
}

func (s *stream) write(b []byte) {
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
}

// line writes one field line. The value must hold no newline (callers
// split data first; ids are cursors, base64url).
func (s *stream) line(field, value string) {
	s.write([]byte(field + ": " + value + "\n"))
}

// comment writes a comment line and ends the block.
func (s *stream) comment(text string) {
	s.write([]byte(": " + text + "\n\n"))
}

// message writes one message: its type (empty: the default "message"),
// its id (empty: none) and its data, one data line per line of data.
func (s *stream) message(event, id string, data []byte) {
	if event != "" {
		s.line("event", event)
	}
	if id != "" {
		s.line("id", strings.NewReplacer("\n", "", "\r", "", "\x00", "").Replace(id))
	}
	data = bytes.ReplaceAll(data, []byte("\r"), nil)
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		s.write([]byte("data: "))
		s.write(l)
		s.write([]byte("\n"))
	}
	s.write([]byte("\n"))
}

// update writes a subscription's update.
func (s *stream) update(u *client.Update) error {
	if s.redact {
		u = redact.Update(u)
	}
	if u.Snapshot != nil {
		b, err := json.Marshal(u.Snapshot)
		if err != nil {
			return err
		}
		s.message("snapshot", u.Cursor, b)
		return nil
	}
	b, err := json.Marshal(u.Event)
	if err != nil {
		return err
	}
	s.message("", u.Cursor, b)
	return nil
}

func (s *stream) flush() error {
	if s.err != nil {
		return s.err
	}
	s.err = s.rc.Flush()
	return s.err
}
