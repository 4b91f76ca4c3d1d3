package skeinhttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"iter"
	"strings"
)

// Message is one message of a Server-Sent Events stream.
type Message struct {
	// Event is the message's type: "snapshot", "end", "error", or empty
	// for an event (the default type, "message").
	Event string
	// ID is the last event ID when the message was dispatched: the cursor
	// of the update, for this package's streams.
	ID string
	// Data is the message's data lines, joined with newlines.
	Data string
}

// Read yields the messages of a Server-Sent Events stream as they arrive,
// following the format's rules (comments skipped, data lines joined, the
// last event ID carried over), until r ends (no error) or fails.
func Read(r io.Reader) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		br := bufio.NewReader(r)
		var m Message
		var data strings.Builder
		var hasData bool
		for {
			line, err := br.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				if !errors.Is(err, io.EOF) {
					yield(Message{}, err)
				}
				return
			}
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if len(line) == 0 { // dispatch
				if hasData {
					m.Data = strings.TrimSuffix(data.String(), "\n")
					if !yield(m, nil) {
						return
					}
				}
				m.Event, hasData = "", false
				data.Reset()
				continue
			}
			if line[0] == ':' {
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				m.Event = string(value)
			case "data":
				data.Write(value)
				data.WriteByte('\n')
				hasData = true
			case "id":
				if !bytes.Contains(value, []byte{0}) {
					m.ID = string(value)
				}
			}
		}
	}
}
