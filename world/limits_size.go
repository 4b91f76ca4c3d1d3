package world

import "unicode/utf8"

// How Limits measure payloads. A payload's size is its length as stored:
// the JSON every World writes for it (encoding/json's encoding of a
// json.RawMessage: insignificant whitespace dropped; <, > and & escaped as
// \u003c, \u003e and \u0026; U+2028 and U+2029 as \u2028 and \u2029),
// which is also what every read returns. A payload so measures the same
// whether it is the one a caller appended or the one a reader got back
// from a cache, a fresh read, another process or a claim-checked object,
// so Run.PayloadBytes (their sum over a run's log) is a function of the
// committed events alone: Apply at the commit and FoldEvents over the log
// as read agree. An error measures the length of its text as a read
// returns it (each byte that is not UTF-8 becomes U+FFFD, 3 bytes) plus
// its details' stored length. An encrypting World's payloads are measured
// as sealed (the bytes its store holds).

// payloadSizes is what an event's payloads measure: the largest one
// (Limits.MaxPayload bounds it) and all of them (Run.PayloadBytes counts
// it).
type payloadSizes struct {
	largest, total int64
}

// add counts one payload of n bytes.
func (s *payloadSizes) add(n int) {
	s.largest = max(s.largest, int64(n))
	s.total += int64(n)
}

// measurePayloads measures the payloads d carries.
func measurePayloads(d EventData) payloadSizes {
	var s payloadSizes
	switch d := d.(type) {
	case *RunCreated:
		s.add(storedLen(d.Input))
		s.add(storedLen(d.ExecutionContext))
	case *RunCompleted:
		s.add(storedLen(d.Output))
	case *RunFailed:
		s.add(ErrorSize(d.Error))
	case *RunHeld:
		s.add(ErrorSize(d.Error))
	case *StepCreated:
		s.add(storedLen(d.Input))
	case *StepCompleted:
		s.add(storedLen(d.Result))
	case *StepFailed:
		s.add(ErrorSize(d.Error))
	case *StepRetrying:
		s.add(ErrorSize(d.Error))
	case *HookCreated:
		s.add(storedLen(d.Metadata))
	case *HookReceived:
		s.add(storedLen(d.Payload))
	case *CompRetryScheduled:
		s.add(ErrorSize(d.Error))
	case *CompFailed:
		s.add(ErrorSize(d.Error))
	case *RunCleanedUp:
		s.add(ErrorSize(d.Error))
	}
	return s
}

// ErrorSize is what e measures as Apply counts it against Limits: its text
// as a read returns it and its details as stored, with its causes and
// joined errors. The engine uses it to cut an error to fit a run's payload
// limit before it commits one.
func ErrorSize(e *ErrorData) int {
	if e == nil {
		return 0
	}
	n := textLen(e.Type) + textLen(e.Message) + textLen(e.Stack) + textLen(e.Code) + storedLen(e.Details) + ErrorSize(e.Cause)
	for _, m := range e.Errors {
		n += ErrorSize(m)
	}
	return n
}

// textLen is the length of s once stored and read back as a JSON string:
// each byte that is not part of valid UTF-8 becomes U+FFFD (3 bytes).
func textLen(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += utf8.RuneLen(utf8.RuneError)
		} else {
			n += size
		}
		i += size
	}
	return n
}

// storedLen is the length of the JSON value p as encoding/json writes it
// as a json.RawMessage (see above), without writing it. p and p's stored
// form measure the same.
func storedLen(p []byte) int {
	n := 0
	inString, escaped := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			n += len(`\u003c`)
			continue
		case c == 0xE2 && i+2 < len(p) && p[i+1] == 0x80 && p[i+2]&^1 == 0xA8:
			n += len(`\u2028`)
			i += 2
			continue
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		n++
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
	}
	return n
}
